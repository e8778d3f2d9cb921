"""Output distributions of each mechanism for given inputs, as the auditor sees them.

Exact where the mechanism's own tables give them:

* SanText / SanText+: the float64 interval widths of the banded inverse CDF the sampler searches
  (``SanText.probabilities``, exact to float64 precision down to ~1e-32); SanText+ mixes in "kept" with
  probability 1 - p for non-sensitive words.
* CusText(+): the float64 CDF rows over the word's group.
* TEM: P(y|x) proportional to exp(-eps/2 min(d(x, y), gamma)) over the vocabulary (the bottom element's
  mass split evenly over the words outside L_x), from the same float32 distance rows the sampler uses.
* Cape: the bucketized EM's closed form at one context (a one-token prompt), from the mechanism's own
  utilities.

RANTEXT's list C_r depends on a radius r drawn from the Laplace-norm distribution, for which there is no
closed form: :class:`RantextModel` computes P(y | x, r) exactly for each sampled radius and averages
(bounded means, see :mod:`ppt.audit.bounds`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ppt.mechanisms.cape.mechanism import Cape
from ppt.mechanisms.custext import CusText
from ppt.mechanisms.rantext.mechanism import Rantext
from ppt.mechanisms.santext import SanText, SanTextPlus
from ppt.mechanisms.tem import TEM
from ppt.samplers import laplace
from ppt.spaces.distances import distance_rows


@dataclass
class ExactModel:
    """log P(out | input) rows for inputs given as row ids, outputs indexed 0..n_out-1 (``out_ids`` maps
    an output index to the row or token id the pipeline reports)."""

    mech: object
    kind: str  # "table" | "closed-form"
    n_out: int
    out_ids: np.ndarray
    metric: bool = False  # claim per unit distance (d_X-privacy)
    group_of: np.ndarray | None = None  # claim only between inputs of one group (CusText)
    notes: list[str] = field(default_factory=list)

    def logp(self, rows: np.ndarray) -> np.ndarray:  # [n, n_out] float64
        raise NotImplementedError

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """d(a_i, b_i) in the space's metric (float32 GEMM rows, as the mechanisms use)."""
        space = self.mech.space
        uniq, inv = np.unique(a, return_inverse=True)
        d = distance_rows(space, torch.from_numpy(uniq)).double().cpu().numpy()
        return d[inv, b]


def _log(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


class SanTextModel(ExactModel):
    def __init__(self, mech: SanText):
        super().__init__(mech, "closed-form", mech.space.size, np.arange(mech.space.size), metric=True)

    def logp(self, rows):
        m = self.mech
        p_cols = m.probabilities(torch.as_tensor(np.asarray(rows), dtype=torch.int64)).numpy()
        p = np.zeros((len(rows), self.n_out))
        p[:, m.sensitive] = p_cols
        if isinstance(m, SanTextPlus):
            keep = ~m._is_sensitive.cpu().numpy()[rows]
            p[keep] *= m.p
            p[np.flatnonzero(keep), np.asarray(rows)[keep]] += 1.0 - m.p
        return _log(p)


class CusTextModel(ExactModel):
    def __init__(self, mech: CusText):
        mech._load()
        super().__init__(
            mech, "table", mech.space.size, np.arange(mech.space.size), group_of=mech.group_of.cpu().numpy()
        )

    def logp(self, rows):
        m = self.mech
        rows_t = torch.as_tensor(rows, device=m.cdf.device)
        grp = m.group_of[rows_t]
        c = m.cdf[rows_t].cpu().numpy()
        p_k = np.diff(c, axis=1, prepend=0.0)
        p = np.zeros((len(rows), self.n_out))
        off = m.offsets.cpu().numpy()
        for i, g in enumerate(grp.cpu().tolist()):
            mem = m.members[off[g] : off[g + 1]].cpu().numpy()
            p[i, mem] = p_k[i, : len(mem)]
        return _log(p)


class TEMModel(ExactModel):
    def __init__(self, mech: TEM):
        super().__init__(mech, "closed-form", mech.space.size, np.arange(mech.space.size), metric=True)

    def logp(self, rows):
        m = self.mech
        d = distance_rows(m.space, torch.as_tensor(rows)).double().cpu()
        logits = -m.eps / 2.0 * torch.clamp(d, max=m.gamma)
        return torch.log_softmax(logits, dim=1).numpy()


class CapeModel(ExactModel):
    def __init__(self, mech: Cape):
        super().__init__(mech, "closed-form", int(mech.candidates.numel()), mech.candidates.cpu().numpy())
        self.texts: dict[int, str] = {}  # token id -> its one-token prompt (set by the auditor)

    @torch.inference_mode()
    def logp(self, rows):
        from ppt.mechanisms.cape import utility as cu

        m = self.mech
        out = []
        for row in np.asarray(rows).tolist():
            ids = np.asarray(m.tokenizer.tokenize(self.texts[row]).ids, dtype=np.int64)
            pos = np.flatnonzero(ids == row)[:1]
            feats = m.lm.features([ids], [pos])
            u = m.utilities(m.lm.candidate_logits(feats).float().clone(), torch.tensor([row], device=m.device))
            out.append(cu.closed_form(u.double(), m.eps, m.delta_u, m.buckets).log().cpu().numpy()[0])
        return np.stack(out)


def exact_model(mech) -> ExactModel | None:
    if isinstance(mech, SanText):
        return SanTextModel(mech)
    if isinstance(mech, CusText):
        return CusTextModel(mech)
    if isinstance(mech, TEM):
        return TEMModel(mech)
    if isinstance(mech, Cape):
        return CapeModel(mech)
    return None


class RantextModel:
    """P(y | x) of RANTEXT as E_r[P(y | x, r)]: the list C_r and the exponential mechanism inside it are
    exact for each radius; the radii are drawn as the mechanism draws them (the norm of a Laplace vector
    with scales Delta_d / Z), from the auditor's own generator."""

    def __init__(self, mech: Rantext):
        self.mech = mech
        self.space = mech.space
        self._sr = mech.space.sorted_rows(quiet=True) if mech.uses_fast_path else None

    def sorted_row(self, x: int) -> tuple[np.ndarray, np.ndarray]:
        """(row ids by distance, float16-rounded distances as float64), as the sampler sees them."""
        if self._sr is not None:
            return np.asarray(self._sr.idx[x], dtype=np.int64), np.asarray(self._sr.dist[x], dtype=np.float64)
        d = distance_rows(self.space, torch.tensor([x])).cpu().half().double()[0]
        v, o = torch.sort(d, stable=True)
        return o.numpy(), v.numpy()

    def distances(self, x: int) -> np.ndarray:
        idx, dist = self.sorted_row(x)
        out = np.empty_like(dist)
        out[idx] = dist
        return out

    def radii(self, n: int, g: torch.Generator) -> np.ndarray:
        return laplace.laplace_norms(n, self.mech.noise_scale, g).numpy()

    def cond_probs(self, x: int, ys: np.ndarray, r: np.ndarray, chunk: int = 1 << 14) -> np.ndarray:
        """P(y | x, r) for each y in ``ys`` and each radius: [len(r), len(ys)] in [0, 1]."""
        _, dist = self.sorted_row(x)
        vals, counts = np.unique(dist, return_counts=True)
        dy = self.distances(x)[np.asarray(ys)]
        a_all = self.mech.eps / (2.0 * r)
        out = np.empty((r.size, len(ys)))
        for s in range(0, r.size, chunk):
            rr, a = r[s : s + chunk, None], a_all[s : s + chunk, None]
            w = np.where(vals[None, :] < rr, counts[None, :] * np.exp(-a * vals[None, :]), 0.0)
            z = w.sum(1, keepdims=True)
            out[s : s + chunk] = np.where(dy[None, :] < rr, np.exp(-a * dy[None, :]) / np.maximum(z, 1e-300), 0.0)
        return out


__all__ = ["ExactModel", "RantextModel", "exact_model", "SanTextModel", "CusTextModel", "TEMModel", "CapeModel"]
