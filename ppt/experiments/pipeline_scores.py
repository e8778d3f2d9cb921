"""The metrics of ``ppt eval pipeline``: per-document scores of each output, and the CSV rows of a cell.

Apart from the driver because it is the statistics alone: coherence, diversity, copy of the prefix,
cosine and Rouge-L to the no-privacy continuation, MAUVE, 95% t-intervals, the KNN privacy of the sent
text, and the paired gains (extracted - perturbed, extracted - extract-only control).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppt.experiments.pipeline_cells import CONTROL, REFERENCE, RESAMPLE
from ppt.experiments.pipeline_context import Context


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
