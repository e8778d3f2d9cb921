"""RANTEXT's sampler: the exponential mechanism over each position's prefix of a sorted distance row.

Why run-length form: C_r(t) is the prefix of t's sorted row below the radius r, and the float16
distances of a row take few distinct values (an 11,000-token MiniLM row has ~400), so sampling picks a
run by cumulative weight count * exp(-eps/2 * d / r) and then the candidate inside the run uniformly,
from the same uniform: exactly the per-candidate inverse CDF (the rule of
:func:`ppt.samplers.exponential.sample_from_logits_inverse_cdf`) with ~10x fewer terms. The run tables
are built once from the space's sorted rows (artifact ``rantext-runs``). See
:mod:`ppt.mechanisms.rantext.mechanism` for how the mechanism uses it.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from ppt.lazy import lazy_module

torch = lazy_module("torch")

DEFAULT_CHUNK_ENTRIES = 1 << 18 # run-length entries per sampling block (work arrays stay in cache)
RUN_TABLE_VERSION = 1


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


def sample_prefix_block(d16: torch.Tensor, m: torch.Tensor, a: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF sample of one column per row with weights exp(-a_i * d_ij) over columns j < m_i.

    The direct (uncompressed) form of the sampler, kept as the reference the run-length form is
    tested against. ``d16`` [k, M] distances (columns >= m_i are ignored whatever they hold), ``m`` [k]
    prefix lengths >= 1, ``a`` [k] = eps / (2 r), ``u`` [k] uniforms in [0, 1). Same rule as
    ppt.samplers.exponential.sample_from_logits_inverse_cdf: the first column whose running sum exceeds u * (the row's
    total over its prefix).
    """
    w = d16.float()
    w.mul_(a.to(torch.float32).clamp(max=1e30).neg().unsqueeze(1))
    w.exp_()
    cdf = torch.cumsum(w, dim=1, dtype=torch.float64)
    total = cdf.gather(1, (m - 1).unsqueeze(1))
    target = u.to(torch.float64).clamp(0.0, 1.0 - 1e-16).unsqueeze(1) * total
    col = torch.searchsorted(cdf, target, right=True).squeeze(1)
    return torch.minimum(col, m - 1)


def build_runs(d16: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Run-length form of sorted float16 distance rows [c, V].

    Returns (values [c, K] float16: each row's distinct distances ascending, +inf after its last run;
    ends [c, K] int32: exclusive end of each run in the sorted row, V after the last run), K the most
    runs in any row. On MiniLM token spaces an 11,000-entry row has ~400 distinct float16 distances.
    """
    c, V = d16.shape
    change = torch.ones((c, V), dtype=torch.bool, device=d16.device)
    change[:, 1:] = d16[:, 1:] != d16[:, :-1]
    n_runs = change.sum(1)
    K = int(n_runs.max()) if c else 1
    ri, cj = change.nonzero(as_tuple=True)  # row-major: runs of each row in order
    run_id = torch.cumsum(change.to(torch.int32), dim=1)[ri, cj] - 1
    values = torch.full((c, K), float("inf"), dtype=torch.float16, device=d16.device)
    values[ri, run_id] = d16[ri, cj]
    starts = torch.full((c, K + 1), V, dtype=torch.int32, device=d16.device)
    starts[ri, run_id] = cj.to(torch.int32)
    return values, starts[:, 1:].contiguous()


def sample_run_block(values: torch.Tensor, ends: torch.Tensor, kr: torch.Tensor, a: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The prefix sampler on run-length rows: the same draw as :func:`sample_prefix_block`, fewer terms.

    ``values``/``ends`` [k, Kp] run-length rows (columns >= kr_i ignored), ``kr`` [k] runs below r,
    ``a`` [k] = eps / (2 r), ``u`` [k]. All candidates of a run share one weight, so the inverse CDF
    over candidates picks a run by cumulative weight (count * exp(-a * value)) and then the candidate
    inside it from where u * total falls within the run: a uniform position, from the same uniform.
    Returns the position in the sorted row.
    """
    counts = ends.clone()
    counts[:, 1:] -= ends[:, :-1]
    kr_np = kr.cpu().numpy().astype(np.int64)
    run, frac = pick_runs(values.cpu(), counts.cpu(), kr_np, _neg_a(a.cpu()), _clamp_u(u.cpu()))
    row = np.arange(kr_np.size)
    end = ends.cpu().numpy()[row, run].astype(np.int64)
    return torch.from_numpy(candidate_in_run(end, counts.cpu().numpy()[row, run].astype(np.int64), frac)).to(values.device)


def _neg_a(a: torch.Tensor) -> np.ndarray:
    """-a in float32, as the weights use it (float32 [k])."""
    return a.to(torch.float32).clamp(max=1e30).neg().numpy()


def _clamp_u(u: torch.Tensor) -> np.ndarray:
    """Uniforms clamped below 1, as the inverse CDF uses them (float64 [k])."""
    return u.to(torch.float64).clamp(0.0, 1.0 - 1e-16).numpy()


def pick_runs(values: torch.Tensor, counts: torch.Tensor, kr: np.ndarray, neg_a: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The run each row's uniform falls in, and where inside that run (a fraction in [0, 1]).

    ``values`` [k, Kp] float16 run distances and ``counts`` [k, Kp] run lengths (columns >= kr ignored),
    ``neg_a`` [k] = -eps / (2 r) in float32, ``u`` [k] clamped uniforms. Weights count * exp(-a * value)
    in float32, summed in float64 along each row: a row's result never depends on the other rows or
    on the padding.
    """
    w = values.float()
    w.mul_(torch.from_numpy(neg_a).unsqueeze(1))
    w.exp_()
    w.mul_(counts)
    cdf_t = torch.cumsum(w, dim=1, dtype=torch.float64)
    cdf = cdf_t.numpy()
    row = np.arange(kr.size)
    last = kr - 1
    target = u * cdf[row, last]
    run = torch.searchsorted(cdf_t, torch.from_numpy(target).unsqueeze(1), right=True).squeeze(1).numpy()
    run = np.minimum(run, last)
    hi = cdf[row, run]
    lo = np.where(run > 0, cdf[row, np.maximum(run - 1, 0)], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.clip((target - lo) / (hi - lo), 0.0, 1.0)
    return run, frac


def candidate_in_run(end: np.ndarray, count: np.ndarray, frac: np.ndarray) -> np.ndarray:
    """Position in the sorted row of the candidate at ``frac`` of a run of ``count`` ending at ``end``."""
    start = end - count
    with np.errstate(invalid="ignore"):
        j = start + np.floor(frac * count.astype(np.float64)).astype(np.int64)
    return np.minimum(j, end - 1)


@contextmanager
def single_threaded():
    """Run small element-wise torch kernels on one thread, restoring the setting afterwards.

    The sampling blocks are cache-sized; splitting them across intra-op threads costs more in
    synchronisation than it saves (on a shared 2-core machine, 100x more for a cumulative sum).
    """
    n = torch.get_num_threads()
    if n == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


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


def _plain(arr: np.ndarray) -> np.ndarray:
    """A plain ndarray view of a memory map (indexing a np.memmap pays for its subclass machinery)."""
    return arr.view(np.ndarray) if isinstance(arr, np.memmap) else arr


@dataclass
class RunTable:
    """Run-length sorted rows: ``values``/``ends`` [R, K] (see :func:`build_runs`) and ``idx`` [R, V]."""

    values: np.ndarray
    ends: np.ndarray
    idx: np.ndarray
    artifact: Any = None

    @cached_property
    def counts(self) -> np.ndarray:
        """Run lengths [R, K] (int16 when they fit), computed once from ``ends``."""
        ends = _plain(self.ends)
        dtype = np.int16 if ends.size == 0 or int(ends[:, -1].max()) <= np.iinfo(np.int16).max else np.int32
        out = np.empty(ends.shape, dtype=dtype)
        out[:, :1] = ends[:, :1]
        np.subtract(ends[:, 1:], ends[:, :-1], out=out[:, 1:], casting="unsafe")
        return out


def sample_runs(
    table: RunTable, rows: np.ndarray, r: np.ndarray, u: np.ndarray, eps: float, budget: int = DEFAULT_CHUNK_ENTRIES
) -> tuple[np.ndarray, np.ndarray]:
    """RANTEXT's steps 2-3 for positions whose sorted rows are ``table`` rows ``rows``.

    Returns (output vocabulary rows, |C_r| per position).
    """
    rows = np.asarray(rows, dtype=np.int64)
    r = np.maximum(np.asarray(r, dtype=np.float64), np.finfo(np.float64).tiny)  # r > 0: distance-0 tokens stay in
    values, ends, counts = _plain(table.values), _plain(table.ends), table.counts
    kr = np.maximum(prefix_lengths(values, rows, r), 1)  # runs below r (run 0 is distance 0)
    size = np.asarray(ends[rows, kr - 1], dtype=np.int64)
    neg_a = _neg_a(torch.from_numpy(eps / (2.0 * r)))
    u = _clamp_u(torch.from_numpy(np.asarray(u, dtype=np.float64)))
    run = np.empty(rows.size, dtype=np.int64)
    frac = np.empty(rows.size, dtype=np.float64)
    with single_threaded():
        for sel in length_chunks(kr, budget):
            Kp = int(kr[sel].max())
            rsel = rows[sel]
            v = torch.from_numpy(values[rsel, :Kp])
            c = torch.from_numpy(counts[rsel, :Kp])
            run[sel], frac[sel] = pick_runs(v, c, kr[sel], neg_a[sel], u[sel])
    col = candidate_in_run(ends[rows, run].astype(np.int64), counts[rows, run].astype(np.int64), frac)
    out = np.asarray(_plain(table.idx)[rows, col], dtype=np.int64)
    return out, size


def build_run_table_files(dist: np.ndarray, tmp: Path, chunk: int = 256) -> dict:
    """Write the run-length form of a sorted-rows distance table (values.npy float16, ends.npy int32)."""
    V = dist.shape[0]
    parts = []
    for s in range(0, V, chunk):
        v, e = build_runs(torch.from_numpy(np.array(dist[s : s + chunk])))
        parts.append((v.numpy(), e.numpy()))
    K = max(p[0].shape[1] for p in parts)
    values = np.full((V, K), np.inf, dtype=np.float16)
    ends = np.full((V, K), dist.shape[1], dtype=np.int32)
    s = 0
    for v, e in parts:
        values[s : s + v.shape[0], : v.shape[1]] = v
        ends[s : s + e.shape[0], : e.shape[1]] = e
        s += v.shape[0]
    np.save(tmp / "values.npy", values)
    np.save(tmp / "ends.npy", ends)
    return {"max_runs": int(K), "rows": int(V)}


__all__ = [
    "DEFAULT_CHUNK_ENTRIES", "RUN_TABLE_VERSION", "RunTable", "build_run_table_files", "build_runs", "candidate_in_run",
    "length_chunks", "pick_runs", "prefix_lengths", "sample_prefix_block", "sample_run_block", "sample_runs", "single_threaded",
]
