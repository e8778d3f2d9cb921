"""Each mechanism's output distribution for given inputs, as `ppt audit` reads it (``Mechanism.audit_model``).

Why beside the mechanisms: the distribution is knowledge the mechanism owns (its tables, its closed form),
so a plug-in mechanism that returns an :class:`ExactModel` from ``audit_model()`` is audited like a
built-in, with no branch on its name in :mod:`ppt.audit`. Exact where the mechanism's tables give it:
SanText(+) from the banded inverse CDF's float64 widths (SanText+ mixes in "kept" with probability 1 - p),
CusText(+) from the float64 CDF rows of the word's group, TEM from exp(-eps/2 min(d, gamma)) over the
float32 distance rows the sampler uses, Cape from the bucketized EM's closed form at a one-token context.
RANTEXT's list C_r depends on a random radius: :class:`RantextModel` is exact per sampled radius.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ppt.lazy import lazy_module
from ppt.samplers import laplace
from ppt.spaces.distances import distance_rows

torch = lazy_module("torch")


@dataclass
class ExactModel:
    """log P(out | input) rows for inputs given as row ids, outputs indexed 0..n_out-1 (``out_ids`` maps
    an output index to the row or token id the pipeline reports).

    The auditor searches pairs of ``universe()`` rows (nearest and farthest by ``distance`` when the model
    has a metric space, random ones otherwise), keeps those ``claim_mask`` allows, and names tokens with
    ``token_texts`` / ``output_text``."""

    mech: object
    kind: str  # "table" | "closed-form"
    n_out: int
    out_ids: np.ndarray
    metric: bool = False  # claim per unit distance (d_X-privacy)
    group_of: np.ndarray | None = None  # claim only between inputs of one group (CusText)
    notes: list[str] = field(default_factory=list)
    texts: dict[int, str] = field(default_factory=dict)  # row -> its one-token prompt (set by the auditor)

    def logp(self, rows: np.ndarray) -> np.ndarray:  # [n, n_out] float64
        raise NotImplementedError

    @property
    def space(self):
        """The embedding space the rows index, or None (Cape: token ids of a context model)."""
        return getattr(self.mech, "space", None)

    def universe(self) -> np.ndarray:
        """The input rows an audit may search."""
        return np.arange(self.space.size)

    def token_texts(self, row: int) -> list[str]:
        """Candidate one-token texts for an input row, tried in turn until the pipeline perturbs one."""
        t = self.space.vocab[row]
        return [t, " " + t, t.lower()]

    def output_text(self, row: int) -> str:
        return self.space.vocab[row]

    def input_text(self, row: int) -> str:
        return self.space.vocab[row]

    def claim_mask(self) -> tuple[np.ndarray, str] | None:
        """Rows the proven claim covers (pairs outside it are left out) and the note saying why; None: all."""
        return None

    def logp_claimed(self, rows: np.ndarray) -> np.ndarray:
        """log P(out | input) over the outputs the proven claim covers (default: all of them, ``logp``)."""
        return self.logp(rows)

    def allowance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """What the claim adds to eps (per token, or eps * d for metric claims) for each pair (a_i, b_i)."""
        return np.zeros(len(a))

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """d(a_i, b_i) in the space's metric (float32 GEMM rows, as the mechanisms use)."""
        uniq, inv = np.unique(a, return_inverse=True)
        d = distance_rows(self.space, torch.from_numpy(uniq)).double().cpu().numpy()
        return d[inv, b]


def _log(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


class SanTextModel(ExactModel):
    def __init__(self, mech):
        super().__init__(mech, "closed-form", mech.space.size, np.arange(mech.space.size), metric=True)

    def logp(self, rows):
        m = self.mech
        p_cols = m.probabilities(torch.as_tensor(np.asarray(rows), dtype=torch.int64)).numpy()
        p = np.zeros((len(rows), self.n_out))
        p[:, m.sensitive] = p_cols
        if m.keeps_words:  # SanText+: a non-sensitive word is kept with probability 1 - p
            keep = ~m._is_sensitive.cpu().numpy()[rows]
            p[keep] *= m.p
            p[np.flatnonzero(keep), np.asarray(rows)[keep]] += 1.0 - m.p
        return _log(p)

    def logp_claimed(self, rows):
        """SanText+: the resampled outputs only. A kept word (a non-sensitive input released verbatim, 1 - p) is
        listed as unprotected by the stamp, outside its proven figure: its mass is left out here."""
        m = self.mech
        if not m.keeps_words:
            return self.logp(rows)
        p_cols = m.probabilities(torch.as_tensor(np.asarray(rows), dtype=torch.int64)).numpy()
        p = np.zeros((len(rows), self.n_out))
        p[:, m.sensitive] = p_cols
        p[~m._is_sensitive.cpu().numpy()[rows]] *= m.p
        return _log(p)

    def allowance(self, a, b):
        """SanText+: ln(1/p) between a non-sensitive and a sensitive input (the stamp's cross-class term)."""
        if not self.mech.keeps_words:
            return np.zeros(len(a))
        sens = self.mech._is_sensitive.cpu().numpy()
        return np.where(sens[np.asarray(a)] != sens[np.asarray(b)], self.mech.cross_class_eps, 0.0)


class CusTextModel(ExactModel):
    def __init__(self, mech):
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
    def __init__(self, mech):
        super().__init__(mech, "closed-form", mech.space.size, np.arange(mech.space.size), metric=True)

    def logp(self, rows):
        m = self.mech
        d = distance_rows(m.space, torch.as_tensor(rows)).double().cpu()
        logits = -m.eps / 2.0 * torch.clamp(d, max=m.gamma)
        return torch.log_softmax(logits, dim=1).numpy()


class CapeModel(ExactModel):
    """Cape's rows are its context model's token ids (no embedding space): pairs are drawn at random."""

    def __init__(self, mech, context: str = ""):
        super().__init__(mech, "closed-form", int(mech.candidates.numel()), mech.candidates.cpu().numpy())
        self.context = context  # text before the audited token (words the policy keeps): a longer context

    @property
    def space(self):
        return None

    def universe(self) -> np.ndarray:
        return self.out_ids

    def token_texts(self, row: int) -> list[str]:
        t = self.output_text(row)
        return [self.context + t, self.context + " " + t] if self.context else [t, " " + t]

    def output_text(self, row: int) -> str:
        col = int(np.flatnonzero(self.out_ids == row)[0])
        return self.mech.cand_text[col]

    def input_text(self, row: int) -> str:
        return self.texts.get(row) or str(row)

    def logp(self, rows):
        from ppt.mechanisms.cape import utility as cu

        m = self.mech
        out = []
        with torch.inference_mode():
            for row in np.asarray(rows).tolist():
                ids = np.asarray(m.tokenizer.tokenize(self.texts[row]).ids, dtype=np.int64)
                pos = np.flatnonzero(ids == row)[-1:]  # the audited token is the last (after the context)
                feats = m.lm.features([ids], [pos])
                logits = m.lm.candidate_logits(feats).float().clone()
                u = m.utilities(logits, torch.tensor([row], device=m.device))
                out.append(cu.closed_form(u.double(), m.eps, m.delta_u, m.buckets).log().cpu().numpy()[0])
        return np.stack(out)


class RantextModel(ExactModel):
    """P(y | x) of RANTEXT as E_r[P(y | x, r)]: the list C_r and the exponential mechanism inside it are
    exact for each radius; the radii are drawn as the mechanism draws them (the norm of a Laplace vector
    with scales Delta_d / Z), from the auditor's own generator."""

    def __init__(self, mech):
        super().__init__(mech, "sampled-radius", mech.space.size, np.arange(mech.space.size))
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

    def periphery(self, k: int) -> np.ndarray:
        """The k rows farthest from the mean row (L2), farthest first."""
        e = self.space.embeddings.double().cpu()
        d = (e - e.mean(0, keepdim=True)).norm(dim=1)
        return torch.argsort(d, descending=True, stable=True)[:k].numpy()

    def radii(self, n: int, g) -> np.ndarray:
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


__all__ = ["CapeModel", "CusTextModel", "ExactModel", "RantextModel", "SanTextModel", "TEMModel"]
