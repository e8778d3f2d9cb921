"""SanText's distance rows: eps/2 * (d(x, y) - min_y d(x, y)) over the sensitive words, for given input words.

Why computed per batch: the rows are a function of the embeddings and eps, so no |V| x |V_s| table per eps is
stored; float64 products of a fixed shape make a row's values independent of the batch it is computed in.
"""

from __future__ import annotations

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.spaces import distances

GEMM_BLOCK = 64  # rows per distance matrix product (a fixed shape: a row's values do not depend on its batch)


class GapRows:
    """The gap rows of one (space, sensitive set, eps): torch (:meth:`gaps`) and numpy (:meth:`gaps_np`),
    each with its targets (V_s laid out for one product) made on first use."""

    def __init__(self, space, sensitive: np.ndarray, eps: float):
        self.space = space
        self.sensitive = sensitive  # [|V_s|] sorted rows
        self.eps = eps
        self._target: tuple | None = None
        self._target_np: tuple | None = None  # (V_s embeddings float64 laid out for the product, column of each row)

    def targets(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(V_s's float64 embeddings, laid out for :meth:`gaps`'s one-product distances; each row's column
        in V_s, -1 if none). L2: [-2 y, 1, |y|^2] * (eps/2)^2, so [x, |x|^2, 1] . that = (eps/2)^2 d(x, y)^2."""
        if self._target is None:
            emb = self.space.embeddings
            cols = torch.from_numpy(self.sensitive).to(emb.device)
            t = emb[cols].to(torch.float64)
            if self.space.metric == "l2":
                one = torch.ones((t.shape[0], 1), dtype=torch.float64, device=t.device)
                t = torch.cat([-2.0 * t, one, (t * t).sum(1, keepdim=True)], dim=1).mul_((self.eps / 2.0) ** 2)
            col_of = torch.full((emb.shape[0],), -1, dtype=torch.int64, device=emb.device)
            col_of[cols] = torch.arange(cols.numel(), device=emb.device)
            self._target = (t.T.contiguous(), col_of)
        return self._target

    def gaps(self, rows: torch.Tensor) -> torch.Tensor:
        """eps/2 * (d(x, y) - min_y d(x, y)) over V_s for each row x ([n, |V_s|] float64, >= 0).

        Distances in float64 by one matrix product per block of ``GEMM_BLOCK`` rows (L2: the squared norms
        ride in the product), each block padded to that shape so a row's values never depend on the other
        rows of its batch; a word's distance to itself is exactly 0."""
        emb = self.space.embeddings
        tt, col_of = self.targets()
        rows = rows.to(emb.device, torch.int64)
        n = rows.numel()
        d = torch.empty((n, tt.shape[1]), dtype=torch.float64, device=emb.device)
        for s in range(0, n, GEMM_BLOCK):
            part = rows[s : s + GEMM_BLOCK]
            k = part.numel()
            if k < GEMM_BLOCK:
                part = torch.cat([part, part[-1:].expand(GEMM_BLOCK - k)])
            a = emb[part].to(torch.float64)
            if self.space.metric != "l2":
                d[s : s + k] = distances.pairwise(a, tt.T, self.space.metric, dtype=torch.float64)[:k].mul_(
                    self.eps / 2.0
                )
                continue
            a = torch.cat([a, (a * a).sum(1, keepdim=True), torch.ones_like(a[:, :1])], dim=1)
            if k == GEMM_BLOCK:
                torch.mm(a, tt, out=d[s : s + k])
            else:
                d[s : s + k] = torch.mm(a, tt)[:k]
        if self.space.metric == "l2":
            d.clamp_(min=0.0).sqrt_()
        own = col_of[rows]
        has = torch.nonzero(own >= 0).squeeze(1)
        d[has, own[has]] = 0.0
        return d.sub_(d.min(dim=1, keepdim=True).values)

    def targets_np(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`targets` in numpy, from the space's (memory-mapped) rows."""
        if self._target_np is None:
            emb = self.space.array
            t = np.asarray(emb[self.sensitive], dtype=np.float64)
            if self.space.metric == "l2":
                t = (
                    np.concatenate([-2.0 * t, np.ones((t.shape[0], 1)), (t * t).sum(1, keepdims=True)], axis=1)
                    * (self.eps / 2.0) ** 2
                )
            col_of = np.full(emb.shape[0], -1, dtype=np.int64)
            col_of[self.sensitive] = np.arange(self.sensitive.size)
            self._target_np = (np.ascontiguousarray(t.T), col_of)
        return self._target_np

    def gaps_np(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`gaps` in numpy (the same fixed-shape float64 products)."""
        emb = self.space.array
        tt, col_of = self.targets_np()
        n = rows.size
        d = np.empty((n, tt.shape[1]), dtype=np.float64)
        for s in range(0, n, GEMM_BLOCK):
            part = rows[s : s + GEMM_BLOCK]
            k = part.size
            if k < GEMM_BLOCK:
                part = np.concatenate([part, np.repeat(part[-1:], GEMM_BLOCK - k)])
            a = np.asarray(emb[part], dtype=np.float64)
            if self.space.metric != "l2":
                an = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
                tn = tt.T / np.maximum(np.linalg.norm(tt.T, axis=1, keepdims=True), 1e-12)
                d[s : s + k] = (np.maximum(1.0 - an @ tn.T, 0.0) * (self.eps / 2.0))[:k]
                continue
            a = np.concatenate([a, (a * a).sum(1, keepdims=True), np.ones((a.shape[0], 1))], axis=1)
            d[s : s + k] = (a @ tt)[:k]
        if self.space.metric == "l2":
            np.sqrt(np.maximum(d, 0.0, out=d), out=d)
        own = col_of[rows]
        has = np.flatnonzero(own >= 0)
        d[has, own[has]] = 0.0
        d -= d.min(axis=1, keepdims=True)
        return d
