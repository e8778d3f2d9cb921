"""SanText's distance rows: eps/2 * (d(x, y) - min_y d(x, y)) over the sensitive words, for given input words.

Why computed per batch: the rows are a function of the embeddings and eps, so no |V| x |V_s| table per eps is
stored; exact distances (issue 36) make a row's values independent of the batch it is computed in and of the CPU.
"""

from __future__ import annotations

import math

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.spaces import distances

GEMM_BLOCK = 64  # rows per distance matrix product (exact: a row's values depend on neither its block nor its batch)


class GapRows:
    """The gap rows of one (space, sensitive set, eps): torch (:meth:`gaps`) and numpy (:meth:`gaps_np`).

    Exact distances (issue 36): both compute the distances on the space's integer grid
    (:class:`ppt.spaces.distances.ExactGrid`: integer dot products and squared norms below 2**53, exact
    in any order, whatever the BLAS, its blocking or the CPU), then the correctly rounded square root
    (or cosine), the scale eps/2 and the row minimum by IEEE basic operations: the same bits on every CPU,
    in both backends, whatever rows share a batch."""

    def __init__(self, space, sensitive: np.ndarray, eps: float):
        self.space = space
        self.sensitive = sensitive  # [|V_s|] sorted rows
        self.eps = eps
        self._col_of: torch.Tensor | None = None
        self._target_np: tuple | None = None  # (grid exponent, V_s grid rows, their squared norms, column of each row)

    def gaps(self, rows: torch.Tensor) -> torch.Tensor:
        """eps/2 * (d(x, y) - min_y d(x, y)) over V_s for each row x ([n, |V_s|] float64, >= 0), from the
        exact distances of :func:`ppt.spaces.distances.distance_rows` (blocks of ``GEMM_BLOCK`` rows); a
        word's distance to itself is exactly 0."""
        emb = self.space.embeddings
        rows = rows.to(emb.device, torch.int64).reshape(-1)
        if self._col_of is None:
            cols = torch.from_numpy(self.sensitive).to(emb.device)
            col_of = torch.full((emb.shape[0],), -1, dtype=torch.int64, device=emb.device)
            col_of[cols] = torch.arange(cols.numel(), device=emb.device)
            self._col_of = col_of
            self._cols = None if self.sensitive.size == emb.shape[0] else cols  # None: every row (w = 1)
        d = distances.distance_rows(self.space, rows, block=GEMM_BLOCK, dtype=torch.float64)
        if self._cols is not None:
            d = d[:, self._cols]
        d.mul_(self.eps / 2.0)
        return d.sub_(d.min(dim=1, keepdim=True).values)

    def targets_np(self) -> tuple:
        """(grid exponent e, V_s's rows on the grid, their squared norms, each row's column in V_s or -1),
        numpy, from the space's (memory-mapped) rows: the grid of :class:`ppt.spaces.distances.ExactGrid`."""
        if self._target_np is None:
            emb = self.space.array
            top = float(np.abs(np.asarray(emb)).max()) if emb.size else 0.0
            q = distances.grid_bits(max(1, int(emb.shape[-1])))
            e = q - math.frexp(top)[1] if top > 0 else 0
            t = np.round(np.asarray(emb[self.sensitive], dtype=np.float64) * 2.0**e)
            col_of = np.full(emb.shape[0], -1, dtype=np.int64)
            col_of[self.sensitive] = np.arange(self.sensitive.size)
            self._target_np = (e, np.ascontiguousarray(t.T), (t * t).sum(1), col_of)
        return self._target_np

    def gaps_np(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`gaps` in numpy: the same exact integers, the same IEEE operations, the same bits."""
        emb = self.space.array
        e, tt, tsq, col_of = self.targets_np()
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        n = rows.size
        d = np.empty((n, tt.shape[1]), dtype=np.float64)
        if self.space.metric == "cosine":
            tnorm = np.sqrt(tsq)
        for s in range(0, n, GEMM_BLOCK):
            a = np.round(np.asarray(emb[rows[s : s + GEMM_BLOCK]], dtype=np.float64) * 2.0**e)
            asq = (a * a).sum(1)
            dot = a @ tt  # integer products and sums below 2**53: exact in any order
            if self.space.metric == "l2":
                blk = tsq[None, :] - 2.0 * dot
                blk += asq[:, None]
                np.sqrt(np.maximum(blk, 0.0, out=blk), out=blk)
                blk *= 2.0**-e
            else:
                den = np.sqrt(asq)[:, None] * tnorm[None, :]
                pos = den > 0
                cos = np.divide(dot, den, out=np.zeros_like(dot), where=pos)
                blk = np.maximum(1.0 - cos, 0.0)
            d[s : s + GEMM_BLOCK] = blk
        own = col_of[rows]
        has = np.flatnonzero(own >= 0)
        d[has, own[has]] = 0.0
        d *= self.eps / 2.0
        d -= d.min(axis=1, keepdims=True)
        return d
