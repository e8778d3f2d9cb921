"""RANTEXT's run-length sampler in numpy: the CPU backend's :func:`~ppt.mechanisms.rantext.runs.sample_runs`.

Why a numpy twin: the one-record CPU path must not import torch (about a second of start-up), and
numpy does this work as fast on a CPU. The rule is the same as :func:`~ppt.mechanisms.rantext.runs.pick_runs`:
weights count * exp(-a * value) in float32, summed in float64 along each row, the first run whose running
sum exceeds u times the total (``searchsorted(right=True)``, here the count of sums <= the target, the
sums being nondecreasing), then the candidate inside the run from the same uniform. The torch version
stays the device path (:mod:`ppt.mechanisms.rantext.runs`); tests run both.
"""

from __future__ import annotations

import numpy as np

from ppt.mechanisms.rantext.runs import DEFAULT_CHUNK_ENTRIES, RunTable, _plain, candidate_in_run, length_chunks, prefix_lengths


def pick_runs_np(values: np.ndarray, counts: np.ndarray, kr: np.ndarray, neg_a: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~ppt.mechanisms.rantext.runs.pick_runs` on numpy arrays: (run, fraction inside the run)."""
    w = values.astype(np.float32)
    w *= neg_a[:, None]
    np.exp(w, out=w)
    w *= counts
    cdf = np.cumsum(w, axis=1, dtype=np.float64)
    row = np.arange(kr.size)
    last = kr - 1
    target = u * cdf[row, last]
    run = np.minimum((cdf <= target[:, None]).sum(1), last)
    hi = cdf[row, run]
    lo = np.where(run > 0, cdf[row, np.maximum(run - 1, 0)], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.clip((target - lo) / (hi - lo), 0.0, 1.0)
    return run, frac


def sample_runs_np(
    table: RunTable, rows: np.ndarray, r: np.ndarray, u: np.ndarray, eps: float, budget: int = DEFAULT_CHUNK_ENTRIES
) -> tuple[np.ndarray, np.ndarray]:
    """RANTEXT's steps 2-3 (numpy): (output vocabulary rows, |C_r| per position)."""
    rows = np.asarray(rows, dtype=np.int64)
    r = np.maximum(np.asarray(r, dtype=np.float64), np.finfo(np.float64).tiny)
    values, ends, counts = _plain(table.values), _plain(table.ends), table.counts
    kr = np.maximum(prefix_lengths(values, rows, r), 1)
    size = np.asarray(ends[rows, kr - 1], dtype=np.int64)
    neg_a = -np.minimum((eps / (2.0 * r)).astype(np.float32), np.float32(1e30))
    u = np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0 - 1e-16)
    run = np.empty(rows.size, dtype=np.int64)
    frac = np.empty(rows.size, dtype=np.float64)
    for sel in length_chunks(kr, budget):
        Kp = int(kr[sel].max())
        rsel = rows[sel]
        run[sel], frac[sel] = pick_runs_np(values[rsel, :Kp], counts[rsel, :Kp], kr[sel], neg_a[sel], u[sel])
    col = candidate_in_run(ends[rows, run].astype(np.int64), counts[rows, run].astype(np.int64), frac)
    out = np.asarray(_plain(table.idx)[rows, col], dtype=np.int64)
    return out, size


__all__ = ["pick_runs_np", "sample_runs_np"]
