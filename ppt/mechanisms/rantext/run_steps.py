"""The numpy steps of RANTEXT's run-length sampler (:mod:`ppt.mechanisms.rantext.runs`), numpy only.

Apart from the tables and the samplers that drive them because they are the arithmetic itself: the
binary search for the runs below each radius, the run weights count * exp(-a * d), the block-wise
inverse CDF that picks a run and the candidate inside it, and the cut of positions into blocks. The CPU
sampler and the torch reference both use them; nothing here imports torch.

Every step gives the same bits on every CPU (issue 36): the weights come from
:func:`ppt.samplers.portable.exp2_grid_np` (no library exponential: those differ in their last bits
between SIMD levels and architectures), and the sums run in a fixed order along each row.
"""

from __future__ import annotations

import threading

import numpy as np

from ppt.samplers.portable import LOG2E_GRID, exp2_grid_np

RUN_BLOCK = 32  # runs per block of the cumulative weights on CPU (see pick_runs)
_U_MAX = 1.0 - 1e-16  # uniforms are clamped below 1, as the inverse CDF uses them
_A_MAX = 1e30  # a = eps / (2 r) capped, so a * 0 stays 0 for the distance-0 run


def prefix_lengths(dist: np.ndarray, rows: np.ndarray, r: np.ndarray) -> np.ndarray:
    """For each position i, #{j : dist[rows[i], j] < r[i]} over rows sorted ascending.

    A vectorized binary search: ceil(log2(V + 1)) rounds, each one gather of one entry per position
    (so the cost is O(n log V), whatever the prefix lengths are). float16 entries are compared with the
    float64 radius exactly.
    """
    rows = np.asarray(rows, dtype=np.int64)
    V = dist.shape[1]
    flat = np.ascontiguousarray(dist).reshape(-1)
    base = rows * V
    lo = np.zeros(rows.size, dtype=np.int64)
    hi = np.full(rows.size, V, dtype=np.int64)
    for _ in range(int(V).bit_length()):
        active = lo < hi
        mid = (lo + hi) >> 1
        below = flat.take(base + np.minimum(mid, V - 1)) < r
        lo = np.where(active & below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)
    return lo


def weight_scale(a: np.ndarray) -> np.ndarray:
    """Per position, the factor the weights apply to each run distance: -min(a, 1e30) * 2**20 / ln 2
    (float64 [k]; see :func:`run_weights`)."""
    return -(np.minimum(np.asarray(a, dtype=np.float64), _A_MAX) * LOG2E_GRID)


def clamp_u(u: np.ndarray) -> np.ndarray:
    """Uniforms clamped to [0, 1), as the inverse CDF uses them (float64 [k])."""
    return np.clip(np.asarray(u, dtype=np.float64), 0.0, _U_MAX)


def run_weights(values: np.ndarray, counts: np.ndarray, scale: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Run weights [k, W] float64: count * exp(-a * value), the same bits on every CPU (padding, value
    +inf and count 0, weighs 0).

    ``values`` float16 or float32 (converted exactly), ``counts`` any numeric type, ``scale`` [k] from
    :func:`weight_scale`. exp(-a * value) is 2**(rint(scale * value) / 2**20)
    (:func:`ppt.samplers.portable.exp2_grid_np`): the exponent rounded to a multiple of 2**-20, a relative
    error below 3.4e-7 (float32 gave about the same), computed without any library exponential.
    ``out``: a float64 array of at least k * W entries to write them to (the caller's block is never written).
    """
    k, W = values.shape
    x = np.empty((k, W)) if out is None else out.reshape(-1)[: k * W].reshape(k, W)
    np.copyto(x, values)  # float16/float32 -> float64: exact
    x *= scale[:, None]
    exp2_grid_np(x, out=x, flush=False)  # weights below 2**-1020: tiny, not 0 (padding has count 0)
    x *= counts
    return x


_work = threading.local()


def _weights_buffer(n: int) -> np.ndarray:
    """This thread's float64 work array for :func:`pick_runs`' weights (reused: no fresh pages per block)."""
    buf = getattr(_work, "weights", None)
    if buf is None or buf.size < n:
        buf = _work.weights = np.empty(n)
    return buf


def pad_block(values: np.ndarray, counts: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (float32) and ``counts`` widened to ``width`` columns with padding (+inf, 0)."""
    k, Kp = values.shape
    v = np.full((k, width), np.inf, dtype=np.float32)
    v[:, :Kp] = values
    c = np.zeros((k, width), dtype=counts.dtype)
    c[:, :Kp] = counts
    return v, c


def pick_runs(
    values: np.ndarray, counts: np.ndarray, kr: np.ndarray, scale: np.ndarray, u: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The run each row's uniform falls in, and where inside that run (a fraction in [0, 1]).

    ``values`` [k, Kp] float16 or float32 run distances and ``counts`` [k, Kp] run lengths (columns >= kr
    ignored; Kp a multiple of ``RUN_BLOCK`` saves a padded copy),
    ``scale`` [k] = :func:`weight_scale` of eps / (2 r), ``u`` [k] clamped uniforms. The run is the first whose
    cumulative weight exceeds u * total, capped at the last run below r.

    Why blocks: a float64 cumulative sum along each row costs ~3 ns an entry in numpy, most of the
    sampler at small eps where rows have hundreds of runs. The cumulative weight is instead organised
    in fixed blocks of ``RUN_BLOCK`` runs: block sums (one vectorised reduction) and their running
    totals find each row's block, and only that block (and the one holding the row's last run) is
    summed run by run. The cumulative weight at run g of block b is (sum of blocks before b) + (sum
    of b's runs up to g): a function of the row's weights alone (fixed block boundaries), so a draw
    never depends on the padding or on the other rows; it equals the sequential sum up to float64
    rounding (a draw can differ from a sequential-sum sampler only when u * total is within ~1e-16 of
    a run boundary).
    """
    k, Kp = values.shape
    L = RUN_BLOCK
    nb = -(-Kp // L)
    if nb * L != Kp:
        values, counts = pad_block(values, counts, nb * L)
    w = run_weights(values, counts, scale, out=_weights_buffer(k * nb * L)).reshape(k * nb, L)  # one block a row
    block_end = np.add.reduce(w, axis=1).reshape(k, nb)
    np.cumsum(block_end, axis=1, out=block_end)  # running totals at the block ends
    block_start = np.zeros(k * nb, dtype=np.float64)
    block_start.reshape(k, nb)[:, 1:] = block_end[:, :-1]
    first = np.arange(0, k * nb, nb)  # each row's first block
    last = kr - 1
    b_last, j_last = last // L, last % L
    at = np.arange(0, k * L, L)  # each row's first entry in a [k, L] block

    def within(b: np.ndarray) -> np.ndarray:
        """Cumulative weights inside block b of each row, from the row's start ([k * L], flat)."""
        blk = first + b
        cdf = np.cumsum(w.take(blk, axis=0), axis=1)
        cdf += block_start.take(blk)[:, None]
        return cdf.reshape(-1)

    target = u * within(b_last).take(at + j_last)
    b = np.minimum(np.count_nonzero(block_end <= target[:, None], axis=1), b_last)
    cdf = within(b)
    j = np.minimum(np.count_nonzero(cdf.reshape(k, L) <= target[:, None], axis=1), np.where(b == b_last, j_last, L - 1))
    hi = cdf.take(at + j)
    lo = np.where(j > 0, cdf.take(at + np.maximum(j - 1, 0)), block_start.take(first + b))
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.clip((target - lo) / (hi - lo), 0.0, 1.0)
    frac[np.isnan(frac)] = 0.0  # 0 / 0: a zero-weight last run reached by rounding; its first candidate
    return b * L + j, frac


def candidate_in_run(end: np.ndarray, count: np.ndarray, frac: np.ndarray) -> np.ndarray:
    """Position in the sorted row of the candidate at ``frac`` of a run of ``count`` ending at ``end``."""
    start = end - count
    with np.errstate(invalid="ignore"):
        j = start + np.floor(frac * count.astype(np.float64)).astype(np.int64)
    return np.minimum(j, end - 1)


def length_chunks(m: np.ndarray, budget: int) -> list[np.ndarray]:
    """Positions sorted by length, cut into consecutive groups with rows * (longest in group) <= budget."""
    order = np.argsort(m, kind="stable")
    ms = np.maximum(m[order], 1)
    out, s = [], 0
    while s < order.size:
        # rows s..j fit while (j - s + 1) * ms[j] <= budget (non-decreasing in j); at least one row
        cost = np.arange(1, order.size - s + 1) * ms[s:]
        e = s + max(1, int(np.searchsorted(cost, budget, side="right")))
        out.append(order[s:e])
        s = e
    return out


__all__ = [
    "RUN_BLOCK",
    "candidate_in_run",
    "clamp_u",
    "length_chunks",
    "pad_block",
    "pick_runs",
    "prefix_lengths",
    "run_weights",
    "weight_scale",
]
