"""RANTEXT's sampler: the exponential mechanism over each position's prefix of a sorted distance row.

Why run-length form: C_r(t) is the prefix of t's sorted row below the radius r, and the float16
distances of a row take few distinct values (an 11,000-token MiniLM row has ~400), so sampling picks a
run by cumulative weight count * exp(-eps/2 * d / r) and then the candidate inside the run uniformly,
from the same uniform: exactly the per-candidate inverse CDF (the rule of
:func:`ppt.samplers.exponential.sample_from_logits_inverse_cdf`) with ~10x fewer terms. The run tables
are built once from the space's sorted rows (artifact ``rantext-runs``). See
:mod:`ppt.mechanisms.rantext.mechanism` for how the mechanism uses it.

Two implementations of one rule: :func:`sample_runs` (numpy, the CPU path; it never imports torch,
so a one-record CPU run does not pay for it) and :func:`sample_runs_torch` (the same steps as a few
torch kernels over the whole batch, tables resident on the device: the CUDA path). Both compute the
weights ``count * exp(-a * d)`` with the same bits on every CPU (:func:`run_weights`: the exponent
rounded to a multiple of 2**-20, :mod:`ppt.samplers.portable`, no library exponential) and sum them in
float64 along each row in a fixed order; they differ only in how: numpy sums in blocks
(:func:`pick_runs`), torch sequentially on the CPU and in parallel scans on CUDA. A draw of one
differs from the other's only when u * total falls within such a rounding of a run boundary, never in
distribution. The numpy steps (the binary search, the block-wise inverse CDF) are
:mod:`ppt.mechanisms.rantext.run_steps`; this module holds the tables and the samplers.

Same bits on every CPU (issue 36): the tables come from exact distances
(:func:`ppt.spaces.distances.sorted_rows_to_files`), the weights from IEEE basic operations only, the
sums in an order fixed by the code, not by a library's blocking or vector width.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ppt.mechanisms.rantext.run_steps import (
    _A_MAX,
    _U_MAX,
    RUN_BLOCK,
    candidate_in_run,
    clamp_u,
    length_chunks,
    pick_runs,
    prefix_lengths,
    run_weights,
    weight_scale,
)
from ppt.mechanisms.rantext.run_steps import pad_block as pad_block
from ppt.samplers.portable import LOG2E_GRID, exp2_grid_torch

DEFAULT_CHUNK_ENTRIES = 1 << 18  # run-length entries per sampling block on CPU (work arrays stay in cache)
DEVICE_CHUNK_ENTRIES = 1 << 25  # the same on CUDA: ~0.9 GB of work arrays per block (26 bytes an entry)
RUN_TABLE_VERSION = 1


def sample_prefix_block(d16, m, a, u):
    """Inverse-CDF sample of one column per row with weights exp(-a_i * d_ij) over columns j < m_i.

    The direct (uncompressed) form of the sampler, kept as the reference the run-length form is
    tested against (torch tensors). ``d16`` [k, M] distances (columns >= m_i are ignored whatever they
    hold), ``m`` [k] prefix lengths >= 1, ``a`` [k] = eps / (2 r), ``u`` [k] uniforms in [0, 1). Same
    rule as ppt.samplers.exponential.sample_from_logits_inverse_cdf: the first column whose running
    sum exceeds u * (the row's total over its prefix); the same weights as :func:`run_weights`.
    """
    import torch

    w = exp2_grid_torch(d16.double() * _weight_scale_torch(a.to(torch.float64)).unsqueeze(1), flush=False)
    cdf = torch.cumsum(w, dim=1)
    total = cdf.gather(1, (m - 1).unsqueeze(1))
    target = u.to(torch.float64).clamp(0.0, _U_MAX).unsqueeze(1) * total
    col = torch.searchsorted(cdf, target, right=True).squeeze(1)
    return torch.minimum(col, m - 1)


def build_runs(d16):
    """Run-length form of sorted float16 distance rows [c, V] (a torch tensor).

    Returns (values [c, K] float16: each row's distinct distances ascending, +inf after its last run;
    ends [c, K] int32: exclusive end of each run in the sorted row, V after the last run), K the most
    runs in any row. On MiniLM token spaces an 11,000-entry row has ~400 distinct float16 distances.
    """
    import torch

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


def sample_run_block(values, ends, kr, a, u):
    """The prefix sampler on run-length rows: the same draw as :func:`sample_prefix_block`, fewer terms.

    ``values``/``ends`` [k, Kp] run-length rows (torch tensors; columns >= kr_i ignored), ``kr`` [k]
    runs below r, ``a`` [k] = eps / (2 r), ``u`` [k]. All candidates of a run share one weight, so the
    inverse CDF over candidates picks a run by cumulative weight (count * exp(-a * value)) and then the
    candidate inside it from where u * total falls within the run: a uniform position, from the same
    uniform. Returns the position in the sorted row.
    """
    import torch

    ends_np = ends.cpu().numpy().astype(np.int64)
    counts = ends_np.copy()
    counts[:, 1:] -= ends_np[:, :-1]
    kr_np = kr.cpu().numpy().astype(np.int64)
    a_np = a.cpu().numpy().astype(np.float64)
    run, frac = pick_runs(values.cpu().numpy(), counts, kr_np, weight_scale(a_np), clamp_u(u.cpu().numpy()))
    row = np.arange(kr_np.size)
    col = candidate_in_run(ends_np[row, run], counts[row, run], frac)
    return torch.from_numpy(col).to(values.device)


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
    def values32(self) -> np.ndarray:
        """``values`` as float32 (exact), made once: the weights read it (float16 converts ~2x slower)."""
        return np.asarray(self.values, dtype=np.float32)

    @cached_property
    def counts(self) -> np.ndarray:
        """Run lengths [R, K] (int16 when they fit), computed once from ``ends``."""
        ends = _plain(self.ends)
        dtype = np.int16 if ends.size == 0 or int(ends[:, -1].max()) <= np.iinfo(np.int16).max else np.int32
        out = np.empty(ends.shape, dtype=dtype)
        out[:, :1] = ends[:, :1]
        np.subtract(ends[:, 1:], ends[:, :-1], out=out[:, 1:], casting="unsafe")
        return out

    def on_device(self, device) -> DeviceRunTable:
        """The table as torch tensors on ``device`` (one copy per device, kept with the table)."""
        key = str(device)
        cache = self.__dict__.setdefault("_device_tables", {})
        if key not in cache:
            cache[key] = DeviceRunTable.from_table(self, device)
        return cache[key]


def sample_runs(
    table: RunTable, rows: np.ndarray, r: np.ndarray, u: np.ndarray, eps: float, budget: int = DEFAULT_CHUNK_ENTRIES
) -> tuple[np.ndarray, np.ndarray]:
    """RANTEXT's steps 2-3 for positions whose sorted rows are ``table`` rows ``rows`` (numpy; CPU).

    Returns (output vocabulary rows, |C_r| per position). Positions are sorted by their number of runs
    below r and cut into blocks of at most ``budget`` entries (little padding; a position's draw does
    not depend on its block).
    """
    rows = np.asarray(rows, dtype=np.int64)
    r = np.maximum(np.asarray(r, dtype=np.float64), np.finfo(np.float64).tiny)  # r > 0: distance-0 tokens stay in
    values, ends, counts, values32 = _plain(table.values), _plain(table.ends), table.counts, table.values32
    kr = np.maximum(prefix_lengths(values, rows, r), 1)  # runs below r (run 0 is distance 0)
    size = np.asarray(ends[rows, kr - 1], dtype=np.int64)
    scale = weight_scale(eps / (2.0 * r))
    u = clamp_u(u)
    run = np.empty(rows.size, dtype=np.int64)
    frac = np.empty(rows.size, dtype=np.float64)
    for sel in length_chunks(kr, budget):
        Kp = min(
            -(-int(kr[sel].max()) // RUN_BLOCK) * RUN_BLOCK, values.shape[1]
        )  # whole blocks where the table has them
        rsel = rows[sel]
        run[sel], frac[sel] = pick_runs(values32[rsel, :Kp], counts[rsel, :Kp], kr[sel], scale[sel], u[sel])
    col = candidate_in_run(ends[rows, run].astype(np.int64), counts[rows, run].astype(np.int64), frac)
    out = np.asarray(_plain(table.idx)[rows, col], dtype=np.int64)
    return out, size


# ---- the torch sampler (CUDA; CPU tensors in tests) ------------------------------------------------------


@dataclass
class DeviceRunTable:
    """A :class:`RunTable` as torch tensors on one device: values float16, counts and ends int32, and the
    sorted rows' indices (int16 when the vocabulary fits: 11k x 11k is 242 MB)."""

    values: Any
    counts: Any
    ends: Any
    idx: Any

    @classmethod
    def from_table(cls, table: RunTable, device) -> DeviceRunTable:
        import torch

        idx = _plain(table.idx)
        V = idx.shape[1] if idx.ndim == 2 else 0
        idx_dtype = np.int16 if V <= np.iinfo(np.int16).max + 1 else np.int32  # indices 0..V-1

        def put(arr: np.ndarray, dtype) -> torch.Tensor:
            a = np.ascontiguousarray(_plain(arr), dtype=dtype)
            if not a.flags.writeable:  # a read-only memory map: torch wants its own copy
                a = a.copy()
            return torch.from_numpy(a).to(device)

        return cls(
            values=put(table.values, np.float16),
            counts=put(table.counts, np.int32),
            ends=put(table.ends, np.int32),
            idx=put(idx, idx_dtype),
        )


def _prefix_lengths_torch(values, rows, r):
    """:func:`prefix_lengths` in torch: runs of each position's row below its radius (binary search)."""
    import torch

    K = values.shape[1]
    flat = values.reshape(-1)
    base = rows * K
    lo = torch.zeros_like(rows)
    hi = torch.full_like(rows, K)
    for _ in range(int(K).bit_length()):
        mid = (lo + hi) >> 1
        below = flat[base + mid.clamp(max=K - 1)].double() < r  # float16 -> float64 is exact
        active = lo < hi
        lo = torch.where(active & below, mid + 1, lo)
        hi = torch.where(active & ~below, mid, hi)
    return lo


def _width(kr, K: int):
    """The block width of each position: the next power of two >= its runs below r (at least 16), at most
    K. It depends on the position alone, so on CUDA (whose scans round by width) a draw never depends on
    the other positions of its batch. Integer arithmetic (frexp is exact): no log2 to round."""
    import torch

    _, e = torch.frexp((kr.clamp(min=16) - 1).double())  # kr - 1 < 2**e: 2**e is the next power of two >= kr
    return (torch.ones_like(kr) << e.long()).clamp(max=K)


def _weight_scale_torch(a):
    """:func:`weight_scale` in torch (float64 [k]): the same operations, the same bits."""
    return -(a.clamp(max=_A_MAX) * LOG2E_GRID)


def _pick_runs_torch(values, counts, kr, scale, u):
    """:func:`pick_runs` in torch on one block ([k, W] values/counts, ``scale`` from :func:`weight_scale`):
    (run, frac). The weights are :func:`run_weights`' bits."""
    import torch

    w = exp2_grid_torch(values.double() * scale.unsqueeze(1), flush=False) * counts
    cdf = torch.cumsum(w, dim=1)
    last = (kr - 1).unsqueeze(1)
    target = u.unsqueeze(1) * cdf.gather(1, last)
    run = torch.minimum(torch.searchsorted(cdf, target, right=True), last)
    hi = cdf.gather(1, run)
    lo = torch.where(run > 0, cdf.gather(1, (run - 1).clamp(min=0)), torch.zeros_like(hi))
    frac = ((target - lo) / (hi - lo)).nan_to_num(nan=0.0).clamp(0.0, 1.0)
    return run.squeeze(1), frac.squeeze(1)


def sample_runs_torch(table: DeviceRunTable, rows, r, u, eps: float, budget: int | None = None):
    """:func:`sample_runs` for torch tensors on the table's device: (output vocabulary rows, |C_r|), int64.

    The whole batch in a few kernels per block: a binary search for the runs below each radius, then,
    for positions grouped by block width (:func:`_width`) in blocks of at most ``budget`` entries, the
    weights, their float64 cumulative sums, the inverse-CDF search and the candidate inside the run.
    """
    import torch

    dev = table.values.device
    if budget is None:
        budget = DEVICE_CHUNK_ENTRIES if dev.type == "cuda" else DEFAULT_CHUNK_ENTRIES
    rows = torch.as_tensor(rows).to(dev, torch.int64)
    r = torch.as_tensor(r).to(dev, torch.float64).clamp(min=float(np.finfo(np.float64).tiny))
    u = torch.as_tensor(u).to(dev, torch.float64).clamp(0.0, _U_MAX)
    n = rows.numel()
    K = table.values.shape[1]
    kr = _prefix_lengths_torch(table.values, rows, r).clamp(min=1)
    size = table.ends[rows, kr - 1].long()
    scale = _weight_scale_torch(eps / (2.0 * r))
    run = torch.empty(n, dtype=torch.int64, device=dev)
    frac = torch.empty(n, dtype=torch.float64, device=dev)
    width = _width(kr, K)
    order = torch.argsort(width, stable=True)
    widths, per = torch.unique_consecutive(width[order], return_counts=True)
    start = 0
    for W, cnt in zip(widths.tolist(), per.tolist()):  # one host sync per batch: a few widths
        step = max(1, budget // W)
        for s in range(start, start + cnt, step):
            sel = order[s : min(s + step, start + cnt)]
            rsel = rows[sel]
            run[sel], frac[sel] = _pick_runs_torch(
                table.values[rsel, :W], table.counts[rsel, :W], kr[sel], scale[sel], u[sel]
            )
        start += cnt
    end = table.ends[rows, run].long()
    count = table.counts[rows, run].long()
    col = torch.minimum(end - count + torch.floor(frac * count.double()).long(), end - 1)
    out = table.idx[rows, col].long()
    return out, size


def build_run_table_files(dist: np.ndarray, tmp: Path, chunk: int = 256) -> dict:
    """Write the run-length form of a sorted-rows distance table (values.npy float16, ends.npy int32)."""
    import torch

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
    "DEFAULT_CHUNK_ENTRIES",
    "DEVICE_CHUNK_ENTRIES",
    "RUN_TABLE_VERSION",
    "DeviceRunTable",
    "RunTable",
    "build_run_table_files",
    "build_runs",
    "candidate_in_run",
    "clamp_u",
    "length_chunks",
    "pick_runs",
    "prefix_lengths",
    "run_weights",
    "sample_prefix_block",
    "sample_run_block",
    "sample_runs",
    "sample_runs_torch",
    "weight_scale",
]
