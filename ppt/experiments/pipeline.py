"""InferDPT end to end: sanitize -> remote continuation -> local extraction, over mechanisms x eps.

    ppt eval pipeline --out-dir docs/inferdpt --journal-dir runs/inferdpt --resume

The utility the papers claim is about the *final* text, not the sanitized prompt (what ``docs/sweep``
measures). For each cell (mechanism, eps), on the same documents: sanitize the raw prefix, have the
remote model continue it, extract with the local model; outputs are compared with the remote model's
continuation of the raw prefix (cell ``reference``, run first). Resumable: each cell journals
every finished document (``<journal-dir>/<cell>.jsonl``), so an interrupted run loses at most one chunk
of generations.

This module is the driver; the settings and cells are :mod:`.pipeline_cells`, the shared models
:mod:`.pipeline_context`, the metrics :mod:`.pipeline_scores` and the tables and plot :mod:`.pipeline_report`.
The steps, references, metrics and resumption in full: docs/experiments.md; a run's results: docs/inferdpt/.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ppt.experiments.pipeline_cells import (
    CONTROL,
    DEFAULT_EPS,
    DEFAULT_MECHS,
    REFERENCE,
    RESAMPLE,
    PipelineConfig,
    cell_plan,
    cell_slug,
    parse_cell,
)
from ppt.experiments.pipeline_context import Context
from ppt.experiments.pipeline_report import LABELS, markdown, plot, write_outputs
from ppt.experiments.pipeline_scores import cell_rows, control_rows, mean_ci, score_outputs
from ppt.experiments.plot import fmt
from ppt.log import note


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


__all__ = [
    "CONTROL",
    "DEFAULT_EPS",
    "DEFAULT_MECHS",
    "LABELS",
    "REFERENCE",
    "RESAMPLE",
    "Context",
    "PipelineConfig",
    "cell_plan",
    "cell_rows",
    "cell_slug",
    "control_rows",
    "load_docs",
    "markdown",
    "mean_ci",
    "parse_cell",
    "plot",
    "run_cell",
    "run_pipeline",
    "score_outputs",
    "write_outputs",
]
