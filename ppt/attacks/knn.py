"""KNN / embedding-inversion attack (Song & Raghunathan 2020; InferDPT Sec. VI-C; Cape Sec. 5).

For each perturbed token the adversary ranks the whole vocabulary by embedding distance to it and
takes the K nearest; the attack succeeds at K when the original token is among them. A perturbed
token that is itself a vocabulary row is its own nearest neighbour (distance 0), so top-1 success
equals "the token was left unchanged" in the mechanism's own space.

Cost: one chunked matrix product per block of distinct query rows ([chunk x d] @ [d x V]) and a
``topk``; neighbours are memoised per row, so a corpus (or a sweep over many eps) pays once per
distinct perturbed token, not once per occurrence.
"""

from __future__ import annotations

import numpy as np
import torch

from ppt.spaces.distances import METRICS


def nearest_rows(
    queries: torch.Tensor,
    emb: torch.Tensor,
    k: int,
    metric: str = "l2",
    self_rows: torch.Tensor | None = None,
    chunk: int = 1024,
    emb_sqnorm: torch.Tensor | None = None,
) -> torch.Tensor:
    """Indices of the ``k`` rows of ``emb`` [V, d] nearest to each query [n, d] (int64 [n, k], nearest first).

    Ranks by ``||e||^2 - 2 q.e`` (l2; the query norm and the square root do not change the order) or
    by ``-cos`` (cosine). ``self_rows`` [n]: each query is that row of ``emb``, which is then ranked
    first whatever the round-off (a token is at distance 0 from itself).
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}")
    n, v = queries.shape[0], emb.shape[0]
    k = min(k, v)
    out = torch.empty((n, k), dtype=torch.int64)
    if n == 0:
        return out
    e = emb.float()
    if metric == "cosine":
        e = torch.nn.functional.normalize(e, dim=1)
    elif emb_sqnorm is None:
        emb_sqnorm = (e * e).sum(1)
    et = e.T.contiguous()
    for s in range(0, n, chunk):
        q = queries[s : s + chunk].to(e.device, torch.float32)
        if metric == "cosine":
            scores = -(torch.nn.functional.normalize(q, dim=1) @ et)
        else:
            scores = torch.addmm(emb_sqnorm.unsqueeze(0), q, et, beta=1.0, alpha=-2.0)
        if self_rows is not None:
            r = self_rows[s : s + chunk].to(e.device)
            scores[torch.arange(r.shape[0], device=e.device), r] = -float("inf")
        out[s : s + chunk] = torch.topk(scores, k, dim=1, largest=False, sorted=True).indices.cpu()
    return out


class KnnAttack:
    """Top-K embedding inversion in one space, memoising each row's K nearest neighbours."""

    name = "knn"

    def __init__(self, space, ks: tuple[int, ...] = (1, 10), chunk: int = 1024):
        ks = tuple(sorted({int(k) for k in ks}))
        if not ks or ks[0] < 1:
            raise ValueError("K must be >= 1")
        self.space = space
        self.ks = ks
        self.kmax = min(ks[-1], space.size)
        self.chunk = chunk
        self._nbrs = np.full((space.size, self.kmax), -1, dtype=np.int64)
        self._have = np.zeros(space.size, dtype=bool)
        self._sqnorm = None

    def neighbours(self, rows: np.ndarray) -> np.ndarray:
        """[n, kmax] nearest rows (itself first) of each row in ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        need = np.unique(rows[~self._have[rows]]) if rows.size else rows
        if need.size:
            emb = self.space.embeddings
            if self._sqnorm is None and self.space.metric == "l2":
                self._sqnorm = (emb.float() ** 2).sum(1)
            idx = torch.from_numpy(need).to(emb.device)
            nb = nearest_rows(
                emb[idx], emb, self.kmax, self.space.metric, self_rows=idx, chunk=self.chunk, emb_sqnorm=self._sqnorm
            )
            self._nbrs[need] = nb.numpy()
            self._have[need] = True
        return self._nbrs[rows]

    def hits(self, orig_rows: np.ndarray, new_rows: np.ndarray) -> np.ndarray:
        """bool [n, len(ks)]: original among the K nearest neighbours of the perturbed token.

        ``orig_rows`` of -1 (original not in this space's vocabulary) never succeed."""
        orig_rows = np.asarray(orig_rows, dtype=np.int64)
        new_rows = np.asarray(new_rows, dtype=np.int64)
        out = np.zeros((orig_rows.shape[0], len(self.ks)), dtype=bool)
        if not orig_rows.size:
            return out
        nb = self.neighbours(new_rows)
        match = nb == orig_rows[:, None]
        rank = np.where(match.any(1), match.argmax(1), self.kmax)  # position of the original, kmax = absent
        for j, k in enumerate(self.ks):
            out[:, j] = rank < k
        return out


def vocab_index(space) -> dict[str, int]:
    """Case-folded vocabulary string -> first row with it."""
    index: dict[str, int] = {}
    for i, w in enumerate(space.vocab):
        index.setdefault(w.casefold(), i)
    return index


def rows_in_space(space, words: list[str], index: dict[str, int] | None = None) -> np.ndarray:
    """Map token text onto ``space`` rows: case-folded exact vocabulary match, else the single
    in-vocabulary piece the space's tokenizer gives, else -1. Pass ``index`` (:func:`vocab_index`)
    when calling repeatedly."""
    index = vocab_index(space) if index is None else index
    out = np.full(len(words), -1, dtype=np.int64)
    for i, w in enumerate(words):
        key = w.strip().casefold()
        r = index.get(key)
        if r is None and key:
            toks = space.tokenize(w.strip())
            rows = [int(x) for x, kind in zip(toks.rows.tolist(), toks.kinds) if kind != "space"]
            r = rows[0] if len(rows) == 1 and rows[0] >= 0 else None
        if r is not None:
            out[i] = r
    return out
