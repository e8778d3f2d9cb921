"""SanText and SanText+ (Yue et al., 2021): word-level metric-LDP sampling over a sensitive word set.

A word x becomes y in V_s (the least frequent fraction ``w`` of the words) with P ~ exp(-eps/2 * d(x, y)):
eps-d_X-privacy between the words whose rows are sampled. This module holds the mechanisms; their distance
rows are :mod:`.santext_gaps`, the sampler :mod:`.santext_sampling`, the cache :mod:`.santext_row_cache`.
The derivation, the precision argument and the reference code's problems: docs/mechanisms/santext.md.
"""

from __future__ import annotations

import math
import threading
from typing import Any, ClassVar

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.accounting import MetricDpEvent, SelfComposedEvent, UnprotectedEvent
from ppt.mechanisms.params import Param
from ppt.mechanisms.pipeline import TokenMechanism
from ppt.mechanisms.policy import Policy
from ppt.mechanisms.privacy import warn_worst_case
from ppt.mechanisms.santext_gaps import GEMM_BLOCK, GapRows  # noqa: F401 - GEMM_BLOCK re-exported
from ppt.mechanisms.santext_row_cache import RowCache
from ppt.mechanisms.santext_sampling import (  # noqa: F401 - the sampler's names re-exported
    BAND_NATS,
    MAX_GAP,
    band_cdf,
    band_cdf_np,
    bands,
    bands_np,
    neg_exp,
    neg_exp_np,
    sample_banded,
    sample_banded_np,
    sample_cdf,
    sample_cdf_np,
    search_rows,
    search_rows_np,
)
from ppt.spaces import distances

KEPT_REASON = "kept by SanText+ (non-sensitive, 1-p)"  # the unprotected reason of the words it keeps
SENSITIVE_RULE = "least-frequent floor(w*V+0.5) min 1, ties by row"
ROW_CHUNK = 128  # distinct input words whose rows are held at once ([ROW_CHUNK, |V_s|] float64)
ROW_CACHE_BYTES = 256 << 20  # default cap of the per-instance cache of prepared rows (SanText.row_cache_bytes)


def sensitive_size(w: float, vocab_size: int) -> int:
    """Number of sensitive words: round half up of w * |V|, at least 1."""
    return max(1, min(vocab_size, int(math.floor(w * vocab_size + 0.5))))


def sensitive_rows(freq_rank: np.ndarray, w: float) -> np.ndarray:
    """Rows of the least frequent fraction w of the vocabulary, sorted by row index."""
    freq_rank = np.asarray(freq_rank)
    n = sensitive_size(w, len(freq_rank))
    # least frequent first = highest rank first; ties broken by row index (lexsort: last key primary)
    order = np.lexsort((np.arange(len(freq_rank)), -freq_rank.astype(np.int64)))
    return np.sort(order[:n]).astype(np.int64)


class SanText(TokenMechanism):
    """SanText: every in-vocabulary word is resampled from the whole vocabulary (w = 1)."""

    name: ClassVar[str] = "santext"
    notion: ClassVar[str] = (
        "metric LDP (d_X-privacy): eps per unit of embedding distance (eps/2 in the exponent as in the paper); worst case eps * D over the vocabulary"
    )
    summary: ClassVar[str] = "SanText: resample every word with P ~ exp(-eps/2 d(x,y)) over the vocabulary (GloVe)"
    # eps 0.8 (the paper's examples use 3): worst case 0.8 * D = 18.2 (<= 20) on glove-6b-50d; names came
    # through unchanged 18.4% of the time at eps 3 and 0% at 0.8 (CHANGELOG)
    defaults: ClassVar[dict[str, Any]] = {"eps": 0.8, "w": 1.0}
    default_space: ClassVar[str] = "glove-6b-50d"
    default_policy: ClassVar[Policy] = Policy(oov="uniform", numbers="random-digits", punct="keep", stopwords="perturb")
    fixed_w: ClassVar[float | None] = 1.0
    row_cache_bytes: int = ROW_CACHE_BYTES  # memory cap of the rows cached across batches (0: none)

    def __init__(
        self,
        eps: float = 0.8,
        space=None,
        policy: Policy | None = None,
        device: str = "auto",
        quiet: bool = False,
        w: float | None = None,
    ):
        self.w = self._check_w(w)
        super().__init__(eps, space=space, policy=policy, device=device, quiet=quiet)
        self.sensitive = sensitive_rows(self.space.freq_rank, self.w)  # [|V_s|] sorted rows
        mask = np.zeros(self.space.size, dtype=bool)
        mask[self.sensitive] = True
        self._is_sensitive_np = mask
        self.gap_rows = GapRows(self.space, self.sensitive, self.eps)  # the distance rows (torch and numpy)
        self._row_cache: RowCache | None = None
        self._sample_lock = threading.Lock()
        warn_worst_case(self.name, self.eps, self.worst_case_eps, self.unit)

    @property
    def _is_sensitive(self) -> torch.Tensor:
        return torch.from_numpy(self._is_sensitive_np).to(self.device)

    @property
    def _cols(self) -> torch.Tensor:
        return torch.from_numpy(self.sensitive).to(self.device)

    # ---- privacy ------------------------------------------------------------------------------------

    @property
    def worst_case_eps(self) -> float:
        """eps * D: P[y|x] <= exp(eps d(x, x')) P[y|x'] (eps/2 in the exponent, triangle inequality on the
        numerator and the normaliser), d <= D over the vocabulary (:func:`distances.diameter_bound`)."""
        return self.eps * distances.diameter_bound(self.space)

    def audit_model(self):
        """This mechanism's output distribution for `ppt audit` (:mod:`ppt.mechanisms.exact`)."""
        from ppt.mechanisms.exact import SanTextModel

        return SanTextModel(self)

    def privacy_events(self, acc, *, diagnostics: bool = False) -> list:
        """Metric DP per resampled word (with its unit and the worst case over the vocabulary); words
        SanText+ kept verbatim are unprotected and outside every composed eps."""
        kept = int(acc.extra.get("kept_by_mechanism", 0))
        ev = MetricDpEvent(self.eps, unit=self.unit, worst_case_eps=self.worst_case_eps)
        out: list = [SelfComposedEvent(ev, int(acc.n_perturbed) - kept)]
        if kept:
            out.append(UnprotectedEvent(kept, KEPT_REASON))
        return out

    def signature_params(self) -> dict[str, Any]:
        return {} if self.fixed_w is not None else {"w": self.w}

    # ---- parameters -------------------------------------------------------------------------------

    def _check_w(self, w: float | None) -> float:
        if self.fixed_w is not None:
            if w is not None and float(w) != self.fixed_w:
                raise ValueError(
                    f"{self.name} uses w = {self.fixed_w} (every word sensitive); use santext+ for a smaller sensitive set"
                )
            return self.fixed_w
        return float(self.check_params({} if w is None else {"w": w})["w"])  # its declared range

    def params(self) -> dict[str, Any]:
        return {
            "eps": self.eps,
            "w": self.w,
            "n_sensitive": int(len(self.sensitive)),
            "sensitive_rule": SENSITIVE_RULE,
            "space": self.space.name,
            "space_hash": self.space.hash,
            "metric": self.space.metric,
            "oov": self.policy.oov,
            "numbers": self.policy.numbers,
            "punct": self.policy.punct,
            "stopwords": self.policy.stopwords,
        }

    # ---- the distribution ---------------------------------------------------------------------------

    def probabilities(self, rows: torch.Tensor) -> torch.Tensor:
        """The sampler's P[y | x] over V_s ([n, |V_s|] float64): each output's interval width in the
        banded inverse CDF over the row total, the exact float64 quantities :meth:`sample` searches."""
        rows = torch.as_tensor(rows, dtype=torch.int64).reshape(-1)
        out = torch.empty((rows.numel(), len(self.sensitive)), dtype=torch.float64)
        for s in range(0, rows.numel(), ROW_CHUNK):
            weight, band, totals, offsets = bands(self.gap_rows.gaps(rows[s : s + ROW_CHUNK]))
            p = torch.zeros_like(weight)
            for b in range(totals.shape[1]):
                c = band_cdf(weight, band, b)
                width = torch.diff(c, dim=1, prepend=torch.zeros_like(c[:, :1]))
                p = width if band is None else torch.where(band == b, width, p)
            out[s : s + ROW_CHUNK] = (p / (offsets[:, :1] + totals[:, :1])).cpu()
        return out

    # ---- sampling -----------------------------------------------------------------------------------

    @staticmethod
    def uniform(n: int, g: np.random.Generator) -> np.ndarray:
        """n uniforms on [0, 1) with 106 bits near 0: u_hi + u_lo * 2^-53 (two float64 draws each), so
        the inverse CDF reaches intervals far below float64's 2^-53 grid."""
        hi = g.random(n)
        lo = g.random(n)
        return hi + lo * 2.0**-53

    def draw(self, n: int, g: np.random.Generator) -> dict[str, np.ndarray]:
        return {"u": self.uniform(n, g)}

    def sample(self, rows: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """Rows drawn from P[. | row] over V_s, one (106-bit) uniform each: the distinct rows not in the
        row cache are computed ``ROW_CHUNK`` at a time (then cached), and each position is found by inverse
        CDF over the bands. A row is a pure function of (row, eps, space), so the cache changes no output.
        One call at a time per instance (a lock): the cache's slot maps must not interleave."""
        with self._sample_lock:
            return self._sample(rows, u)

    def _sample(self, rows: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        dev = self.space.embeddings.device
        rows = rows.to(dev)
        u = torch.as_tensor(u).to(dev, torch.float64).clamp(0.0, 1.0)
        out = torch.empty_like(rows)
        if rows.numel() == 0:
            return out
        uniq, inv = torch.unique(rows, return_inverse=True)
        cache = self._cache(dev)
        if cache is not None:
            cache.clock += 1
            slot = cache.slot_of[uniq]
            hit = slot >= 0
            cache.stamp[slot[hit]] = cache.clock  # in use by this batch: not evicted below
            miss = torch.nonzero(~hit).squeeze(1)
        else:
            slot, hit, miss = None, None, torch.arange(uniq.numel(), device=dev)
        # the missing rows, computed ROW_CHUNK at a time
        rank = torch.full_like(uniq, -1)
        rank[miss] = torch.arange(miss.numel(), device=dev)
        prank = rank[inv]
        for s in range(0, miss.numel(), ROW_CHUNK):
            pos = torch.nonzero((prank >= s) & (prank < s + ROW_CHUNK)).squeeze(1)
            local = prank[pos] - s
            chunk = uniq[miss[s : s + ROW_CHUNK]]
            gap = self.gap_rows.gaps(chunk)
            top = float(gap.max())
            if top < BAND_NATS:  # one band: the cdf is the whole rows' cumulative sum
                c = neg_exp(gap).cumsum_(1)
                out[pos] = sample_cdf(c, local, u[pos])
                if cache is not None:
                    cache.put(chunk, c, None, None, None)
                continue
            weight, band, totals, offsets = bands(gap, top)
            out[pos] = sample_banded(weight, band, totals, offsets, local, u[pos])
            if cache is not None:
                cache.put(chunk, weight, band, totals, offsets)
        if cache is not None and bool(hit.any()):  # the cached rows, read in place
            pos = torch.nonzero(hit[inv]).squeeze(1)
            at = slot[inv[pos]]
            one = cache.n_bands[at] == 0
            p1, p2 = pos[one], pos[~one]
            if p1.numel():
                out[p1] = sample_cdf(cache.row, at[one], u[p1])
            if p2.numel():
                out[p2] = sample_banded(cache.row, cache.band, cache.totals, cache.offsets, at[~one], u[p2])
        return self._cols.to(dev)[out].to(self.device)

    def _cache(self, dev) -> RowCache | None:
        """The row cache (None when ``row_cache_bytes`` holds no row), made on first use."""
        if self._row_cache is None or self._row_cache.device != torch.device(dev):
            slots = RowCache.slots_for(self.row_cache_bytes, len(self.sensitive))
            self._row_cache = RowCache(self.space.size, len(self.sensitive), slots, dev) if slots else None
        return self._row_cache

    def perturb_rows(
        self, rows: torch.Tensor, rand: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        if self.backend == "numpy":
            return self._rows_via_numpy(rows, rand)
        return self.sample(rows, rand["u"]), {}

    # ---- the numpy backend (same distribution, same draws; no row cache) -----------------------------

    def sample_np(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """:meth:`sample` in numpy: distinct rows ``ROW_CHUNK`` at a time, banded inverse CDF."""
        rows = np.asarray(rows, dtype=np.int64)
        u = np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0)
        out = np.empty_like(rows)
        if rows.size == 0:
            return out
        uniq, inv = np.unique(rows, return_inverse=True)
        for s in range(0, uniq.size, ROW_CHUNK):
            pos = np.flatnonzero((inv >= s) & (inv < s + ROW_CHUNK))
            local = inv[pos] - s
            gap = self.gap_rows.gaps_np(uniq[s : s + ROW_CHUNK])
            top = float(gap.max())
            if top < BAND_NATS:
                c = np.cumsum(neg_exp_np(gap), axis=1)
                out[pos] = sample_cdf_np(c, local, u[pos])
                continue
            weight, band, totals, offsets = bands_np(gap, top)
            out[pos] = sample_banded_np(weight, band, totals, offsets, local, u[pos])
        return self.sensitive[out]

    def perturb_rows_np(
        self, rows: np.ndarray, rand: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        return self.sample_np(rows, rand["u"]), {}


class SanTextPlus(SanText):
    """SanText+: the least frequent fraction w of words is sensitive and always resampled; other words
    are resampled with probability p and otherwise kept (counted as ``kept_by_mechanism``)."""

    name: ClassVar[str] = "santext+"
    notion: ClassVar[str] = (
        "metric LDP (d_X-privacy): eps per unit of embedding distance (eps/2 in the exponent as in the paper), "
        "plus ln(1/p) between a non-sensitive input (resampled with probability p) and a sensitive one; "
        "worst case eps * D + ln(1/p) over the vocabulary"
    )
    summary: ClassVar[str] = "SanText+: sensitive (rare) words always resampled, others with probability p"
    defaults: ClassVar[dict[str, Any]] = {"eps": 0.8}
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("w", 0.9, "the sensitive (least frequent) share of the vocabulary", low=0.0, high=1.0, open_low=True),
        Param("p", 0.3, "probability of resampling a non-sensitive word (else it is kept verbatim)", low=0.0, high=1.0),
    )
    fixed_w: ClassVar[float | None] = None
    keeps_words: ClassVar[bool] = True

    def __init__(
        self,
        eps: float = 0.8,
        space=None,
        policy: Policy | None = None,
        device: str = "auto",
        quiet: bool = False,
        w: float | None = None,
        p: float | None = None,
    ):
        given = {k: v for k, v in (("w", w), ("p", p)) if v is not None}
        checked = self.check_params(given)
        w, self.p = checked["w"], float(checked["p"])
        super().__init__(eps, space=space, policy=policy, device=device, quiet=quiet, w=w)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "p": self.p}

    def record_extras(self, diag: dict[str, torch.Tensor], counts: list[int]) -> list[dict[str, Any]]:
        """Each record's ``kept_by_mechanism``: the words the 1-p draw kept verbatim (unprotected; the
        privacy events leave them out of the composed eps). Always reported, 0 when the record (or the
        whole batch) had nothing to perturb, so a record's accounting never depends on its batch."""
        extras = super().record_extras(diag, counts)
        unchanged = diag.get("unchanged")
        if unchanged is None:
            kept = [0] * len(counts)
        else:
            rec = np.repeat(np.arange(len(counts)), counts)
            flags = np.asarray(unchanged).astype(np.float64)
            kept = np.bincount(rec, weights=flags, minlength=len(counts)).astype(np.int64).tolist()
        for extra, k in zip(extras, kept):
            extra.setdefault("kept_by_mechanism", k)
        return extras

    def signature_params(self) -> dict[str, Any]:
        return {"w": self.w, "p": self.p}

    @property
    def cross_class_eps(self) -> float:
        """What a resampled word costs beyond eps * d between a non-sensitive input (resampled with probability
        p) and a sensitive one (always resampled): ln(1/p), whatever their distance (second reading, row 20).
        0 when every word is sensitive (w = 1) or every word is resampled (p = 1); with p = 0 no non-sensitive
        word is ever resampled (each is kept, and counted unprotected)."""
        if self.w >= 1.0 or self.p >= 1.0 or self.p <= 0.0:
            return 0.0
        return math.log(1.0 / self.p)

    @property
    def worst_case_eps(self) -> float:
        """eps * D + ln(1/p): SanText's bound between two sensitive inputs, plus the cross-class term."""
        return super().worst_case_eps + self.cross_class_eps

    @property
    def unit(self) -> str:
        extra = self.cross_class_eps
        base = super().unit
        return base if not extra else f"{base}; a non-sensitive vs a sensitive input adds ln(1/p) = {extra:.4g}"

    def mechanism_leaks(self) -> list[str]:
        if self.p >= 1.0 or self.w >= 1.0:
            return []
        return [
            f"santext+ keeps each non-sensitive (frequent) word verbatim with probability 1-p = {1 - self.p:g} "
            f"(w = {self.w:g}: the {1 - self.w:.0%} most frequent words, names among them)"
        ]

    def draw(self, n: int, g: np.random.Generator) -> dict[str, np.ndarray]:
        # two decisions per position, each with its own uniform: resample or keep, then which word
        flip = g.random(n)
        return {"flip": flip, "u": self.uniform(n, g)}

    def perturb_rows_np(
        self, rows: np.ndarray, rand: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        resample = self._is_sensitive_np[rows] | (np.asarray(rand["flip"]) < self.p)
        out = rows.copy()
        if resample.any():
            out[resample] = self.sample_np(rows[resample], np.asarray(rand["u"])[resample])
        return out, {"unchanged": ~resample}

    def perturb_rows(
        self, rows: torch.Tensor, rand: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        if self.backend == "numpy":
            return self._rows_via_numpy(rows, rand)
        resample = self._is_sensitive[rows] | (torch.as_tensor(rand["flip"]).to(rows.device) < self.p)
        out = rows.clone()
        if bool(resample.any()):
            out[resample] = self.sample(rows[resample], torch.as_tensor(rand["u"]).to(rows.device)[resample])
        return out, {"unchanged": ~resample}


__all__ = ["SanText", "SanTextPlus", "sensitive_rows", "sensitive_size"]
