"""Chunked pairwise-distance kernels: L2/cosine by matrix products, top-k, full sorted rows.

Why chunked matrix products: the published RANTEXT code walks ~60M token pairs in a Python loop and
stores the result as multi-GB JSON. A [chunk x V] block of distances is one GEMM
(||a||^2 + ||b||^2 - 2 a.b), so the whole table costs a few seconds on a CPU and memory stays bounded
by ``chunk * V`` floats whatever V is. Everything runs on the embeddings' device (GPU when present).

Why exact (issue 36): a float32 (or float64) GEMM's last bits depend on the BLAS kernel, its blocking
and its thread count, which differ from one CPU model to the next (MKL picks its kernels per CPU), and
those bits decided the float16 rounding of some distances and the order of ties inside the
sorted-rows table, so a seeded RANTEXT draw differed between two machines. The tables and distance
rows that decide tokens (:func:`distance_rows`, :func:`iter_row_blocks`, hence the sorted rows and the
top-k) are computed exactly instead: the rows are put on an integer grid (:func:`exact_grid`; the
default space already is on one, so nothing moves there), small enough that every product and partial
sum of the float64 GEMM is an integer below 2**53, which IEEE arithmetic holds exactly in any order,
on any BLAS, CPU or GPU. The squared distance is then exact, and its square root correctly rounded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

METRICS = ("l2", "cosine")
DISTANCE_BLOCK = 64  # ids per matrix product in distance_rows (memory: block * V float64)
DISTANCES_VERSION = (
    3  # 2: exact distances on an integer grid (issue 36); 3: correctly rounded sqrt on CPU; in every table's cache key
)


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")


def pairwise(
    a: torch.Tensor,
    b: torch.Tensor,
    metric: str = "l2",
    b_sqnorm: torch.Tensor | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Distances between the rows of ``a`` [n, d] and ``b`` [m, d] as an [n, m] tensor (float32 by default)."""
    _check_metric(metric)
    dtype = torch.float32 if dtype is None else dtype
    a = a.to(dtype)
    b = b.to(dtype)
    if metric == "cosine":
        an = torch.nn.functional.normalize(a, dim=1)
        bn = torch.nn.functional.normalize(b, dim=1)
        return (1.0 - an @ bn.T).clamp_(min=0.0)
    bsq = (b * b).sum(1) if b_sqnorm is None else b_sqnorm
    d2 = (a * a).sum(1, keepdim=True) + bsq.unsqueeze(0) - 2.0 * (a @ b.T)
    return d2.clamp_(min=0.0).sqrt_()


def grid_bits(dim: int) -> int:
    """The largest q with 4 * dim * 4**q <= 2**53: rows with integer entries |x| <= 2**q have every product,
    partial sum and squared difference of a dot product or squared distance below 2**53 (exact in float64)."""
    q = 0
    while 4 * dim * 4 ** (q + 1) <= 2**53:
        q += 1
    return q


def sqrt_(x: torch.Tensor) -> torch.Tensor:
    """In-place correctly rounded square root of a float64 tensor. torch's CPU kernel for float64 sqrt is not
    correctly rounded (~1.4% of integer inputs below 2**50 are 1 ulp off, at every ATen capability level; an
    ARM build may round otherwise), numpy's is (the IEEE instruction), and so is CUDA's double sqrt."""
    if x.device.type == "cpu" and x.is_contiguous():
        a = x.numpy()
        np.sqrt(a, out=a)
        return x
    if x.device.type == "cpu":
        x.copy_(torch.from_numpy(np.sqrt(x.numpy())))
        return x
    return x.sqrt_()


class ExactGrid:
    """A space's rows on an integer grid: ``rows`` = rint(x * 2**e) (float64, integer valued, |rows| <= 2**q
    with q = :func:`grid_bits`), their squared norms ``sq`` (exact), and ``e``.

    e is the largest exponent that keeps the rows within 2**q: a space whose rows are multiples of
    2**-e' with e' <= e (the default space: 2**-16) is represented exactly; other rows move by at most
    2**-(e+1) per coordinate (~1e-6 of the largest coordinate): the metric is then the exact distance
    between those grid points. Rounding is half to even; the scaling is by a power of two: exact."""

    def __init__(self, emb: torch.Tensor):
        x = emb.detach().to(torch.float64)
        top = float(x.abs().max()) if x.numel() else 0.0
        q = grid_bits(max(1, int(x.shape[-1])))
        self.e = q - math.frexp(top)[1] if top > 0 else 0  # top < 2**frexp(top)[1]
        self.rows = torch.round(x * 2.0**self.e)
        self.sq = (self.rows * self.rows).sum(1)  # integers below 2**53: exact in any order

    def distances(self, idx: torch.Tensor, metric: str) -> torch.Tensor:
        """Exact float64 distances [len(idx), V] from the rows ``idx`` to every row (0 to themselves).

        l2: sqrt(|a|^2 + |b|^2 - 2 a.b) on the grid, every term an exact integer, then the correctly
        rounded square root times 2**-e (exact). cosine: 1 - a.b / (sqrt(|a|^2) sqrt(|b|^2)) from the
        exact integers, each operation correctly rounded (a zero row has cosine 0), clamped at 0."""
        _check_metric(metric)
        a = self.rows[idx]
        if metric == "l2":
            # |b|^2 - 2 a.b + |a|^2, in place: every product, partial sum and intermediate an integer below
            # 2**53, so exact in any order (whatever the BLAS does inside addmm)
            d = torch.addmm(self.sq.unsqueeze(0), a, self.rows.T, beta=1.0, alpha=-2.0)
            sqrt_(d.add_(self.sq[idx].unsqueeze(1)).clamp_(min=0.0)).mul_(2.0**-self.e)
        else:
            dot = a @ self.rows.T  # exact: integer products and sums below 2**53, in any order
            norm = sqrt_(self.sq.clone())
            den = norm[idx].unsqueeze(1) * norm.unsqueeze(0)
            cos = torch.where(den > 0, dot / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(den))
            d = (1.0 - cos).clamp_(min=0.0)
        d[torch.arange(d.shape[0], device=d.device), idx] = 0.0  # a token is at distance 0 from itself
        return d


def exact_grid(space) -> ExactGrid:
    """The space's :class:`ExactGrid` (made once per space object, on the embeddings' device)."""
    grid = getattr(space, "_exact_grid", None)
    if grid is None:
        grid = ExactGrid(space.embeddings)
        try:
            space._exact_grid = grid
        except AttributeError:  # pragma: no cover - a space type with __slots__
            pass
    return grid


def distance_rows(
    space, ids: torch.Tensor, block: int = DISTANCE_BLOCK, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """Distances from each row in ``ids`` to every row of ``space`` ([len(ids), V], float32 by default).

    Exact (:class:`ExactGrid`): float64 distances on the space's integer grid, then rounded once to
    ``dtype``; one matrix product per block of ``block`` ids. Every value is the same bits whatever the
    block, the batch, the BLAS, the thread count or the CPU, so a record's output never depends on
    batching or on the machine (issue 36). A row's distance to itself is exactly 0. float64 keeps
    threshold decisions (TEM's d <= gamma) off the last float32 bit.
    """
    dtype = torch.float32 if dtype is None else dtype
    emb = space.embeddings
    ids = ids.to(device=emb.device, dtype=torch.int64).reshape(-1)
    n = ids.numel()
    out = torch.empty((n, emb.shape[0]), dtype=dtype, device=emb.device)
    if n == 0:
        return out
    grid = exact_grid(space)
    for start in range(0, n, block):
        part = ids[start : start + block]
        out[start : start + part.numel()] = grid.distances(part, space.metric)
    return out


def iter_row_blocks(
    emb: torch.Tensor, metric: str = "l2", chunk: int = 1024, rows: torch.Tensor | None = None
) -> Iterator[tuple[int, torch.Tensor]]:
    """Yield (start, [chunk, V] distances) for the rows of ``emb`` (or the given row indices): exact float64
    distances (:class:`ExactGrid`), the same bits whatever the chunk, the BLAS, the threads or the CPU."""
    _check_metric(metric)
    n = emb.shape[0] if rows is None else rows.numel()
    grid = ExactGrid(emb)
    for start in range(0, n, chunk):
        idx = torch.arange(start, min(start + chunk, n), device=emb.device)
        src = idx if rows is None else rows[idx]
        yield start, grid.distances(src, metric)


def topk_neighbors(
    emb: torch.Tensor,
    k: int,
    metric: str = "l2",
    chunk: int = 1024,
    progress: Callable[[int], None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The k nearest rows (itself included, first) of every row: (int64 [V,k], float32 [V,k]), from exact
    distances (ties at the k-th distance: whichever torch.topk keeps)."""
    n = emb.shape[0]
    k = min(k, n)
    idx_out = torch.empty((n, k), dtype=torch.int64)
    dist_out = torch.empty((n, k), dtype=torch.float32)
    for start, d in iter_row_blocks(emb, metric, chunk):
        vals, idx = torch.topk(d, k, dim=1, largest=False, sorted=True)
        stop = start + d.shape[0]
        idx_out[start:stop] = idx.cpu()
        dist_out[start:stop] = vals.to(torch.float32).cpu()
        if progress:
            progress(d.shape[0])
    return idx_out, dist_out


def index_dtype(n: int) -> np.dtype:
    """Smallest unsigned index type for a vocabulary of n rows (uint16 up to 65,536 rows)."""
    return np.dtype(np.uint16) if n <= np.iinfo(np.uint16).max + 1 else np.dtype(np.uint32)


def sorted_rows_to_files(
    emb: torch.Tensor,
    idx_path: Path,
    dist_path: Path,
    metric: str = "l2",
    chunk: int = 512,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.dtype, tuple[int, int]]:
    """Write every row's neighbours sorted by distance as raw .npy memmaps (indices, float16 distances).

    Memory stays at O(chunk * V): each block is sorted on the device and streamed to disk. The sort is
    stable on the exact float64 distances (ties by index), which are then rounded to float32 and float16
    (each correctly rounded): the same bytes on every machine.
    """
    n = emb.shape[0]
    itype = index_dtype(n)
    idx_mm = np.lib.format.open_memmap(idx_path, mode="w+", dtype=itype, shape=(n, n))
    dist_mm = np.lib.format.open_memmap(dist_path, mode="w+", dtype=np.float16, shape=(n, n))
    for start, d in iter_row_blocks(emb, metric, chunk):
        vals, idx = torch.sort(d, dim=1, stable=True)
        stop = start + d.shape[0]
        idx_mm[start:stop] = idx.to(torch.int32).cpu().numpy().astype(itype, copy=False)
        dist_mm[start:stop] = vals.to(torch.float32).to(torch.float16).cpu().numpy()
        if progress:
            progress(d.shape[0])
    idx_mm.flush()
    dist_mm.flush()
    del idx_mm, dist_mm
    return itype, (n, n)


def diameter_bound(space) -> float:
    """A provable upper bound D on the distance between any two words of ``space`` (computed once per
    space object, O(|V| d)): for "l2", 2 max_x ||e_x - c|| with c the mean row (triangle inequality
    through c; on glove-6b-50d:20000 D = 22.8 against an exact diameter of 18.7); for "cosine", 2.
    Rounded up by a relative 1e-9 so float64 round-off never makes it smaller than the true bound.

    Metric mechanisms (SanText, TEM) are eps-d_X-private; eps * D is their equivalent worst-case eps
    between two vocabulary words."""
    cached = getattr(space, "_diameter_bound", None)
    if cached is not None:
        return cached
    if space.metric == "cosine":
        value = 2.0
    else:
        emb = np.asarray(space.array, dtype=np.float64)  # numpy: no torch needed to state a bound
        value = float(2.0 * np.linalg.norm(emb - emb.mean(0), axis=1).max()) * (1.0 + 1e-9)
    try:
        space._diameter_bound = value
    except AttributeError:  # pragma: no cover - a space type with __slots__
        pass
    return value
