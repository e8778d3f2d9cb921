"""SanText and SanText+ (Yue et al., 2021): word-level metric-LDP sampling over a sensitive word set.

Mechanism. A sensitive set V_s of the space's words is fixed from word frequencies: the least frequent
fraction ``w`` of the vocabulary (SanText: w = 1, every word). A word x is replaced by y in V_s with

    P[M(x) = y] = exp(-eps/2 * d(x, y)) / sum_{y' in V_s} exp(-eps/2 * d(x, y'))

where d is the space's metric (Euclidean for GloVe). SanText+ samples every sensitive word this way;
a non-sensitive word is sampled the same way with probability ``p`` and otherwise kept (reported as
``kept_by_mechanism`` in the accounting: those words get no protection, by the paper's design).

Privacy notion. For x, x' and any y in V_s the ratio P[y|x] / P[y|x'] is at most exp(eps * d(x, x'))
(triangle inequality applied once to the numerator and once to the normaliser; the derivation is in
``tests/mechanisms/test_santext.py``), i.e. eps-d_X-privacy (metric LDP) between words whose rows are sampled;
eps/2 in the exponent is the paper's convention. A kept non-sensitive word of SanText+ is not covered.

Implementation notes (and the reference code's problems that are avoided here):

* Sensitive-set size: exactly ``floor(w * |V| + 0.5)`` words (round half up, at least 1); the
  ``freq_rank`` ties are broken by row index. The reference computed the cut-off with an off-by-one.
* No per-eps table. The distribution is a function of the embeddings and eps, so each batch computes
  the rows of its distinct input words on the fly (:func:`ppt.spaces.distances.distance_rows`, float64,
  fixed GEMM shapes so a row never depends on its batch), ``ROW_CHUNK`` rows at a time: memory is bounded
  by the chunk, not by |V|^2. A table of every row would be |V| x |V_s| numbers per eps (1.6 GB at 20,000
  words as int32) for information held by |V| x dim floats.
* Row cache. A prepared row (one-band: its cumulative weights; else weights, uint8 bands, band totals and
  offsets) is a pure function of (word, eps, space), so rows computed a second time are kept across
  batches in a per-instance LRU of at most ``row_cache_bytes`` (default ``ROW_CACHE_BYTES``, 256 MB;
  0 disables it): frequent words are then sampled in place, and no output changes.
* Exact sampling by inverse CDF in bands. With the gap g_j = eps/2 (d(x, y_j) - min_k d(x, y_k)) >= 0 and
  weight exp(-g_j), the outputs are split into bands of ``BAND_NATS`` nats of gap; the inverse CDF runs
  over the bands from the least to the most likely (one float64 cumulative sum per band, in column order
  inside a band). Inside a band no weight is below exp(-BAND_NATS) of the band's largest, so a cumulative
  sum of at most |V_s| of them never absorbs one: each output's interval has its exact width to a
  relative 1e-8 (|V_s| e^BAND_NATS 2^-53 at 20,000 words) however small it is. The uniform has 106 bits
  near 0 (``u_hi + u_lo 2^-53``, two float64 uniforms), so intervals down to 2^-106 = 1.2e-32 of the row
  total are hit with their own probability. An output's probability is thus implemented to float64 precision
  unless it is below ~1e-32 (gap above ~73 nats: eps/2 * D > 63 + ln|V_s|, e.g. eps > 6.7 on
  glove-6b-50d:20000, D = 18.7) or its weight underflows (gap > 745 nats). The former int32 table rounded
  every probability to a multiple of 2^-31 = 4.7e-10, which made far words impossible from some inputs
  at eps 3 (issue 16 finding 9). ``probabilities()`` returns the implemented rows (the auditor reads them).
* Randomness: every record draws its uniforms from its own generator (``ppt.rng.record_generator``: numpy, 128-bit seeds),
  the same uniforms per position whatever the batch, so outputs do not depend on batching; the reference
  seeded forked ``multiprocessing`` workers with identical global RNG states, which repeated noise across
  workers.
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
from ppt.spaces import distances

KEPT_REASON = "kept by SanText+ (non-sensitive, 1-p)"  # the unprotected reason of the words it keeps
SENSITIVE_RULE = "least-frequent floor(w*V+0.5) min 1, ties by row"
BAND_NATS = (
    8.0  # (a power of two: see bands()) width of a band of the inverse CDF, in nats of gap (see the module docstring)
)
MAX_GAP = 760.0  # exp(-gap) is 0 in float64 beyond ~745: gaps are clipped here, such an output has probability 0
ROW_CHUNK = 128  # distinct input words whose rows are held at once ([ROW_CHUNK, |V_s|] float64)
ROW_CACHE_BYTES = 256 << 20  # default cap of the per-instance cache of prepared rows (SanText.row_cache_bytes)
GEMM_BLOCK = 64  # rows per distance matrix product (a fixed shape: a row's values do not depend on its batch)


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


def search_rows(cdf: torch.Tensor, rows: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Column per position: the first j with cdf[row, j] > r (vectorized binary search over
    nondecreasing rows; r must be below the row's last value)."""
    n_cols = cdf.shape[1]
    flat = cdf.reshape(-1)
    base = rows.to(torch.int64) * n_cols
    lo = torch.zeros_like(base)
    hi = torch.full_like(base, n_cols - 1)
    for _ in range(max(1, math.ceil(math.log2(max(n_cols, 2)))) + 1):
        mid = (lo + hi) // 2
        right = flat[base + mid] <= r
        lo = torch.where(right, mid + 1, lo)
        hi = torch.where(right, hi, mid)
    return lo


def bands(
    gap: torch.Tensor, top: float | None = None
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """(weights exp(-gap), band of each column (uint8; None: all in band 0), band totals [n, B], band offsets
    [n, B]) of gap rows [n, m] (``top``: their maximum, if known).
    ``gap`` is consumed (its storage becomes the weights: one pass fewer over the rows).

    Band b holds the columns with b * BAND_NATS <= gap < (b + 1) * BAND_NATS; the inverse CDF runs from the
    last band (least likely) to band 0, so band b starts at offset sum_{k > b} total_k."""
    if top is None:
        top = float(gap.max()) if gap.numel() else 0.0
    if top > MAX_GAP:
        gap.clamp_(max=MAX_GAP)
    if top < BAND_NATS:  # one band (small eps, e.g. the default 0.8 on glove-6b-50d): no band index needed
        weight = gap.neg_().exp_()
        band = None
        # the same scatter-add as below, so a row's total never depends on which rows share its chunk
        zero = torch.zeros((), dtype=torch.int64, device=gap.device).expand(weight.shape)
        totals = torch.zeros((weight.shape[0], 1), dtype=weight.dtype, device=weight.device).scatter_add_(
            1, zero, weight
        )
    else:
        n_bands = int(min(top, MAX_GAP) // BAND_NATS) + 1  # the band of the largest gap, + 1
        # floor(gap / BAND_NATS) as truncation of gap * (1 / BAND_NATS) (gap >= 0): exact, since BAND_NATS
        # is a power of two, so the same as bucketizing against the edges b * BAND_NATS, at a fraction of its
        # cost; uint8 (at most MAX_GAP / BAND_NATS = 95) for the band masks, int64 for the scatter-add
        band = gap.mul(1.0 / BAND_NATS).to(torch.uint8)
        weight = gap.neg_().exp_()  # 0 at MAX_GAP
        totals = torch.zeros((weight.shape[0], n_bands), dtype=weight.dtype, device=weight.device).scatter_add_(
            1, band.to(torch.int64), weight
        )
    offsets = totals.flip(1).cumsum(1).flip(1) - totals
    return weight, band, totals, offsets


def band_cdf(weight: torch.Tensor, band: torch.Tensor | None, b: int) -> torch.Tensor:
    """Cumulative weights of band b's columns (flat over the other columns), column order."""
    if band is None:  # the one-band case of :func:`bands`
        return weight.cumsum(1)
    return torch.where(band == b, weight, 0.0).cumsum_(1)


def sample_cdf(c: torch.Tensor, at: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Columns drawn from one-band rows held as their cumulative weights ``c`` (rows ``at``): the banded
    inverse CDF of :func:`sample_banded` with one band (offset 0), in fewer passes. A row's total is its
    last cumulative value: the same sequential column-order sum as :func:`bands`' scatter-add
    (tests/mechanisms/test_santext.py checks that both agree)."""
    last = c[at, -1]
    t = torch.minimum(u * last, torch.nextafter(last, torch.zeros_like(last)))
    return search_rows(c, at, t)


def sample_banded(
    weight: torch.Tensor,
    band: torch.Tensor | None,
    totals: torch.Tensor,
    offsets: torch.Tensor,
    at: torch.Tensor,
    u: torch.Tensor,
) -> torch.Tensor:
    """Columns drawn by the banded inverse CDF from rows ``at`` of :func:`bands`' output (totals/offsets
    may carry extra all-zero bands: they are never hit and change no offset)."""
    out = torch.empty_like(at)
    total = offsets[at, 0] + totals[at, 0]
    t = torch.minimum(u * total, torch.nextafter(total, torch.zeros_like(total)))
    # the band holding t: the first (most likely) non-empty band whose offset is <= t
    hit = (t.unsqueeze(1) >= offsets[at]) & (totals[at] > 0)
    pos_band = hit.to(torch.int8).argmax(dim=1)
    for b in torch.unique(pos_band).tolist():
        sel = torch.nonzero(pos_band == b).squeeze(1)
        need, k = torch.unique(at[sel], return_inverse=True)  # the rows with a position in band b
        if 2 * need.numel() > weight.shape[0]:  # most rows: all of them, no copy
            c, k = band_cdf(weight, band, b), at[sel]
        else:
            c = band_cdf(weight[need], None if band is None else band[need], b)
        r = t[sel] - offsets[at[sel], b]
        r = torch.minimum(r.clamp(min=0.0), torch.nextafter(c[k, -1], torch.zeros_like(r)))
        out[sel] = search_rows(c, k, r)
    return out


# ---- the same sampler in numpy (the CPU backend: no torch import) --------------------------------------


def search_rows_np(cdf: np.ndarray, rows: np.ndarray, r: np.ndarray) -> np.ndarray:
    """:func:`search_rows` in numpy: the first j with cdf[row, j] > r."""
    n_cols = cdf.shape[1]
    flat = cdf.reshape(-1)
    base = rows.astype(np.int64) * n_cols
    lo = np.zeros_like(base)
    hi = np.full_like(base, n_cols - 1)
    for _ in range(max(1, math.ceil(math.log2(max(n_cols, 2)))) + 1):
        mid = (lo + hi) // 2
        right = flat[base + mid] <= r
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right, hi, mid)
    return lo


def bands_np(gap: np.ndarray, top: float) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """:func:`bands` in numpy (``gap`` consumed). Band totals are sequential column-order sums per band,
    as the scatter-add."""
    if top > MAX_GAP:
        np.minimum(gap, MAX_GAP, out=gap)
    if top < BAND_NATS:
        weight = np.exp(np.negative(gap, out=gap), out=gap)
        band = None
        totals = np.cumsum(weight, axis=1)[:, -1:].copy()
    else:
        n_bands = int(min(top, MAX_GAP) // BAND_NATS) + 1
        band = (gap * (1.0 / BAND_NATS)).astype(np.uint8)
        weight = np.exp(np.negative(gap, out=gap), out=gap)
        totals = np.stack([np.cumsum(np.where(band == b, weight, 0.0), axis=1)[:, -1] for b in range(n_bands)], axis=1)
    offsets = np.flip(np.cumsum(np.flip(totals, 1), 1), 1) - totals
    return weight, band, totals, offsets


def band_cdf_np(weight: np.ndarray, band: np.ndarray | None, b: int) -> np.ndarray:
    if band is None:
        return np.cumsum(weight, axis=1)
    return np.cumsum(np.where(band == b, weight, 0.0), axis=1)


def sample_cdf_np(c: np.ndarray, at: np.ndarray, u: np.ndarray) -> np.ndarray:
    last = c[at, -1]
    t = np.minimum(u * last, np.nextafter(last, 0.0))
    return search_rows_np(c, at, t)


def sample_banded_np(
    weight: np.ndarray, band: np.ndarray | None, totals: np.ndarray, offsets: np.ndarray, at: np.ndarray, u: np.ndarray
) -> np.ndarray:
    out = np.empty_like(at)
    total = offsets[at, 0] + totals[at, 0]
    t = np.minimum(u * total, np.nextafter(total, 0.0))
    hit = (t[:, None] >= offsets[at]) & (totals[at] > 0)
    pos_band = hit.argmax(axis=1)
    for b in np.unique(pos_band).tolist():
        sel = np.flatnonzero(pos_band == b)
        need, k = np.unique(at[sel], return_inverse=True)
        c = band_cdf_np(weight[need], None if band is None else band[need], b)
        r = t[sel] - offsets[at[sel], b]
        r = np.minimum(np.maximum(r, 0.0), np.nextafter(c[k, -1], 0.0))
        out[sel] = search_rows_np(c, k, r)
    return out


class RowCache:
    """Prepared rows of frequent words kept across batches, least recently used evicted, in fixed tensors
    (``slots`` rows allocated once; memory pages are touched only as rows are stored). A slot holds a
    one-band row's cumulative weights (``n_bands`` 0) or a banded row's weights, bands, totals, offsets.
    A row is admitted the second time it is computed: words seen once (most rare words) cost no copy."""

    max_bands = int(MAX_GAP // BAND_NATS) + 1

    @classmethod
    def slots_for(cls, cap_bytes: int, width: int) -> int:
        return max(0, int(cap_bytes) // (9 * width + 16 * cls.max_bands + 32))

    def __init__(self, vocab: int, width: int, slots: int, device):
        self.device = torch.device(device)
        kw = {"device": self.device}
        self.row = torch.empty((slots, width), dtype=torch.float64, **kw)
        self.band = torch.empty((slots, width), dtype=torch.uint8, **kw)
        self.totals = torch.zeros((slots, self.max_bands), dtype=torch.float64, **kw)
        self.offsets = torch.zeros((slots, self.max_bands), dtype=torch.float64, **kw)
        self.n_bands = torch.zeros(slots, dtype=torch.int64, **kw)
        self.slot_of = torch.full((vocab,), -1, dtype=torch.int64, **kw)
        self.row_of = torch.full((slots,), -1, dtype=torch.int64, **kw)
        self.stamp = torch.full((slots,), -1, dtype=torch.int64, **kw)  # -1: free
        self.seen = torch.zeros(vocab, dtype=torch.bool, **kw)  # computed before (admitted if computed again)
        self.clock = 0

    def put(
        self,
        rows: torch.Tensor,
        row: torch.Tensor,
        band: torch.Tensor | None,
        totals: torch.Tensor | None,
        offsets: torch.Tensor | None,
    ) -> None:
        """Store the prepared rows computed before (``seen``) in the least recently used slots that the
        current batch does not use."""
        idx = torch.nonzero(self.seen[rows]).squeeze(1)
        self.seen[rows] = True
        k = min(idx.numel(), int((self.stamp < self.clock).sum()))
        if k == 0:
            return
        idx, rows = idx[:k], rows[idx[:k]]
        victims = torch.topk(self.stamp, k, largest=False).indices
        old = self.row_of[victims]
        self.slot_of[old[old >= 0]] = -1
        self.row[victims] = row[idx]
        if band is None:
            self.n_bands[victims] = 0
        else:
            nb = totals.shape[1]
            self.band[victims] = band[idx]
            self.totals[victims] = 0.0
            self.offsets[victims] = 0.0
            self.totals[victims, :nb] = totals[idx]
            self.offsets[victims, :nb] = offsets[idx]
            self.n_bands[victims] = nb
        self.slot_of[rows] = victims
        self.row_of[victims] = rows
        self.stamp[victims] = self.clock


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
        self._target: tuple | None = None
        self._target_np: tuple | None = None  # (V_s embeddings float64, squared norms, column of each row)
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

    def _targets(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(V_s's float64 embeddings, laid out for :meth:`_gaps`'s one-product distances; each row's column
        in V_s, -1 if none). L2: [-2 y, 1, |y|^2] * (eps/2)^2, so [x, |x|^2, 1] . that = (eps/2)^2 d(x, y)^2."""
        if self._target is None:
            emb = self.space.embeddings
            cols = self._cols.to(emb.device)
            t = emb[cols].to(torch.float64)
            if self.space.metric == "l2":
                one = torch.ones((t.shape[0], 1), dtype=torch.float64, device=t.device)
                t = torch.cat([-2.0 * t, one, (t * t).sum(1, keepdim=True)], dim=1).mul_((self.eps / 2.0) ** 2)
            col_of = torch.full((emb.shape[0],), -1, dtype=torch.int64, device=emb.device)
            col_of[cols] = torch.arange(cols.numel(), device=emb.device)
            self._target = (t.T.contiguous(), col_of)
        return self._target

    def _gaps(self, rows: torch.Tensor) -> torch.Tensor:
        """eps/2 * (d(x, y) - min_y d(x, y)) over V_s for each row x ([n, |V_s|] float64, >= 0).

        Distances in float64 by one matrix product per block of ``GEMM_BLOCK`` rows (L2: the squared norms
        ride in the product), each block padded to that shape so a row's values never depend on the other
        rows of its batch; a word's distance to itself is exactly 0."""
        emb = self.space.embeddings
        tt, col_of = self._targets()
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

    def probabilities(self, rows: torch.Tensor) -> torch.Tensor:
        """The sampler's P[y | x] over V_s ([n, |V_s|] float64): each output's interval width in the
        banded inverse CDF over the row total, the exact float64 quantities :meth:`sample` searches."""
        rows = torch.as_tensor(rows, dtype=torch.int64).reshape(-1)
        out = torch.empty((rows.numel(), len(self.sensitive)), dtype=torch.float64)
        for s in range(0, rows.numel(), ROW_CHUNK):
            weight, band, totals, offsets = bands(self._gaps(rows[s : s + ROW_CHUNK]))
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
            gap = self._gaps(chunk)
            top = float(gap.max())
            if top < BAND_NATS:  # one band: the cdf is the whole rows' cumulative sum
                c = gap.neg_().exp_().cumsum_(1)
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

    def _targets_np(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_targets` in numpy, from the space's (memory-mapped) rows."""
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

    def _gaps_np(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`_gaps` in numpy (the same fixed-shape float64 products)."""
        emb = self.space.array
        tt, col_of = self._targets_np()
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
            gap = self._gaps_np(uniq[s : s + ROW_CHUNK])
            top = float(gap.max())
            if top < BAND_NATS:
                c = np.cumsum(np.exp(-gap), axis=1)
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
