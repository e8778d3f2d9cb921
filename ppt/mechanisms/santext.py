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
* The |V| x |V_s| table is built in row chunks from matrix-product distances
  (:func:`ppt.spaces.distances.pairwise`) and stored as *quantized cumulative rows*: int32
  ``C[x, j] = round(S * cdf_x(j))`` with ``S = 2**31 - 1``. Sampling one position is a vectorized
  binary search over its row with a single uniform ``u``: the output column is the first ``j`` with
  ``C[x, j] > floor(u * S)``, so ``P[j] = (C[x, j] - C[x, j-1]) / S`` exactly, in O(log |V_s|) per
  token and without touching the rest of the row (the table is memory-mapped). Probabilities are
  represented to 2**-31 (float16 would give ~1e-3 relative precision and needs a cumsum per row at
  sampling time; the bench script measures both). Precisely: ``C[x, j]`` is the cumulative
  probability rounded to the nearest multiple of 1/S, so the implemented P^[j | x] differs from the exact
  one by less than 1/S = 4.66e-10, and an output whose exact probability is below 1/S may get
  P^ = 0 from one input and a positive P^ from another (far words at large eps, e.g. d = 15 at
  eps 3 on GloVe). For such pairs the implemented ratio is unbounded, so the stamped metric bound
  holds for the exact distribution and, for the implementation, only for outputs whose probability is
  at least 1/S under both inputs. The total variation between the implemented and the exact
  distribution of one token is below |V_s| / S (below 1e-5 on glove-6b-50d:20000). A wider (int64) CDF would double a table that
  is already |V| x |V_s| x 4 bytes (1.6 GB at 20,000 words); README "Privacy accounting, honestly"
  says so.
* The table is a cache artifact (kind ``santext-table``) keyed by the space hash, metric, eps, w and
  the sensitive-set rule, built once (``precompute()``) and verified on load; a corrupt file is rebuilt.
* Randomness: every record draws its uniforms from its own generator (``ppt.rng.record_generator``),
  one uniform per decision, so outputs do not depend on batching; the reference seeded forked
  ``multiprocessing`` workers with identical global RNG states, which repeated noise across workers.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from ppt.accounting import MetricDpEvent, SelfComposedEvent, UnprotectedEvent
from ppt.mechanisms.pipeline import TokenMechanism
from ppt.mechanisms.privacy import warn_worst_case
from ppt.mechanisms.policy import Policy
from ppt.progress import progress_bar
from ppt.spaces import distances

CDF_SCALE = 2**31 - 1  # quantization of the cumulative rows (int32)
KEPT_REASON = "kept by SanText+ (non-sensitive, 1-p)"  # the unprotected reason of the words it keeps
TABLE_FORMAT = "int32-cdf-v1"
SENSITIVE_RULE = "least-frequent floor(w*V+0.5) min 1, ties by row"

# how many tables this process built (tests check that a second construction reads the cache)
BUILD_COUNTS: Counter = Counter()


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


def freq_digest(freq_rank: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(freq_rank, dtype=np.int64)).tobytes()).hexdigest()[:16]


def build_cdf_table(
    emb: torch.Tensor, cols: np.ndarray, eps: float, metric: str, out: np.ndarray, chunk_elems: int = 1 << 22, progress=None
) -> None:
    """Fill ``out`` [V, |cols|] int32 with the quantized cumulative rows of SanText's distribution."""
    v = emb.shape[0]
    m = len(cols)
    target = emb[torch.as_tensor(cols, device=emb.device)]
    tsq = (target.float() ** 2).sum(1) if metric == "l2" else None
    chunk = max(1, min(v, chunk_elems // max(m, 1)))
    col_of = torch.full((v,), -1, dtype=torch.int64, device=emb.device)
    col_of[torch.as_tensor(cols, device=emb.device)] = torch.arange(m, device=emb.device)
    for start in range(0, v, chunk):
        stop = min(v, start + chunk)
        d = distances.pairwise(emb[start:stop], target, metric, b_sqnorm=tsq).double()
        # a word's distance to itself is exactly 0 (the GEMM identity leaves round-off there)
        c = col_of[start:stop]
        own = torch.nonzero(c >= 0).squeeze(1)
        d[own, c[own]] = 0.0
        logits = d.mul_(-eps / 2.0)
        logits -= logits.max(dim=1, keepdim=True).values
        cdf = logits.exp_().cumsum_(dim=1)
        q = cdf.mul_(CDF_SCALE / cdf[:, -1:]).round_().clamp_(0, CDF_SCALE).to(torch.int32)
        q[:, -1] = CDF_SCALE
        out[start:stop] = q.cpu().numpy()
        if progress:
            progress(stop - start)


def search_cdf(table: torch.Tensor, rows: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Column per position: the first j with table[row, j] > floor(u * S) (vectorized binary search)."""
    n_cols = table.shape[1]
    flat = table.reshape(-1)
    t = torch.floor(u.double().clamp(0.0, 1.0 - 2**-53) * CDF_SCALE).to(torch.int64)
    base = rows.to(torch.int64) * n_cols
    lo = torch.zeros_like(base)
    hi = torch.full_like(base, n_cols - 1)
    for _ in range(max(1, math.ceil(math.log2(max(n_cols, 2)))) + 1):
        mid = (lo + hi) // 2
        right = flat[base + mid].to(torch.int64) <= t
        lo = torch.where(right, mid + 1, lo)
        hi = torch.where(right, hi, mid)
    return lo


class SanText(TokenMechanism):
    """SanText: every in-vocabulary word is resampled from the whole vocabulary (w = 1)."""

    name: ClassVar[str] = "santext"
    notion: ClassVar[str] = "metric LDP (d_X-privacy): eps per unit of embedding distance (eps/2 in the exponent as in the paper); worst case eps * D over the vocabulary"
    summary: ClassVar[str] = "SanText: resample every word with P ~ exp(-eps/2 d(x,y)) over the vocabulary (GloVe)"
    # eps 0.8 (the paper's examples use 3): worst case 0.8 * D = 18.2 (<= 20) on glove-6b-50d; names came
    # through unchanged 18.4% of the time at eps 3 and 0% at 0.8 (CHANGELOG)
    defaults: ClassVar[dict[str, Any]] = {"eps": 0.8, "w": 1.0}
    default_space: ClassVar[str] = "glove-6b-50d"
    default_policy: ClassVar[Policy] = Policy(oov="uniform", numbers="random-digits", punct="keep", stopwords="perturb")
    fixed_w: ClassVar[float | None] = 1.0

    def __init__(self, eps: float = 0.8, space=None, policy: Policy | None = None, device: str = "auto", quiet: bool = False, w: float | None = None):
        self.w = self._check_w(w)
        super().__init__(eps, space=space, policy=policy, device=device, quiet=quiet)
        self.sensitive = sensitive_rows(self.space.freq_rank, self.w)  # [|V_s|] sorted rows
        mask = np.zeros(self.space.size, dtype=bool)
        mask[self.sensitive] = True
        self._is_sensitive = torch.from_numpy(mask).to(self.device)
        self._cols = torch.from_numpy(self.sensitive).to(self.device)
        self._table: torch.Tensor | None = None
        self.table_artifact = None
        warn_worst_case(self.name, self.eps, self.worst_case_eps, self.unit)

    # ---- privacy ------------------------------------------------------------------------------------

    @property
    def worst_case_eps(self) -> float:
        """eps * D: P[y|x] <= exp(eps d(x, x')) P[y|x'] (eps/2 in the exponent, triangle inequality on the
        numerator and the normaliser), d <= D over the vocabulary (:func:`distances.diameter_bound`)."""
        return self.eps * distances.diameter_bound(self.space)

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
                raise ValueError(f"{self.name} uses w = {self.fixed_w} (every word sensitive); use santext+ for a smaller sensitive set")
            return self.fixed_w
        w = self.defaults["w"] if w is None else w
        try:
            w = float(w)
        except (TypeError, ValueError):
            raise ValueError(f"w must be a number in (0, 1] (got {w!r})") from None
        if not (0.0 < w <= 1.0):
            raise ValueError(f"w (the sensitive fraction of the vocabulary) must be in (0, 1] (got {w})")
        return w

    def params(self) -> dict[str, Any]:
        return {
            "eps": self.eps, "w": self.w, "n_sensitive": int(len(self.sensitive)), "sensitive_rule": SENSITIVE_RULE,
            "space": self.space.name, "space_hash": self.space.hash, "metric": self.space.metric,
            "oov": self.policy.oov, "numbers": self.policy.numbers, "punct": self.policy.punct, "stopwords": self.policy.stopwords,
        }

    # ---- the table ----------------------------------------------------------------------------------

    def table_deps(self) -> dict[str, Any]:
        return self.space._table_deps(
            "santext-table", eps=self.eps, w=self.w, rule=SENSITIVE_RULE, format=TABLE_FORMAT,
            freq=freq_digest(self.space.freq_rank),
        )

    def _load_table(self) -> torch.Tensor:
        if self._table is not None:
            return self._table
        sp = self.space
        cols = self.sensitive

        def build(tmp: Path) -> dict:
            BUILD_COUNTS["santext-table"] += 1
            out = np.lib.format.open_memmap(tmp / "cdf.npy", mode="w+", dtype=np.int32, shape=(sp.size, len(cols)))
            with progress_bar(sp.size, f"santext table {sp.name} eps={self.eps:g} w={self.w:g}", self.quiet, unit="row") as bar:
                build_cdf_table(sp.embeddings, cols, self.eps, sp.metric, out, progress=bar.update)
            out.flush()
            del out
            np.save(tmp / "sensitive.npy", cols)
            return {"shape": [sp.size, len(cols)], "scale": CDF_SCALE, "format": TABLE_FORMAT, "eps": self.eps, "w": self.w}

        art = sp.cache.get_or_build("santext-table", self.table_deps(), build)
        if not np.array_equal(np.load(art.file("sensitive.npy")), cols):  # defensive: deps pin this
            raise RuntimeError(f"santext table {art.path} does not match the sensitive set")
        # copy-on-write map: shares the page cache, loads only the rows a batch touches
        table = torch.from_numpy(np.load(art.file("cdf.npy"), mmap_mode="c"))
        if self.device.type != "cpu":
            table = table.to(self.device)
        self._table, self.table_artifact = table, art
        return table

    def precompute(self, quiet: bool = False) -> list:
        self._load_table()
        return [self.table_artifact]

    # ---- sampling -----------------------------------------------------------------------------------

    def draw(self, n: int, g: torch.Generator) -> dict[str, torch.Tensor]:
        return {"u": torch.rand(n, generator=g, dtype=torch.float64)}

    def sample(self, rows: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """Rows drawn from P[. | row] over V_s, one uniform each."""
        table = self._load_table()
        cols = search_cdf(table, rows.to(table.device), u.to(table.device))
        return self._cols[cols.to(self.device)]

    def perturb_rows(self, rows: torch.Tensor, rand: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return self.sample(rows, rand["u"]), {}


class SanTextPlus(SanText):
    """SanText+: the least frequent fraction w of words is sensitive and always resampled; other words
    are resampled with probability p and otherwise kept (counted as ``kept_by_mechanism``)."""

    name: ClassVar[str] = "santext+"
    summary: ClassVar[str] = "SanText+: sensitive (rare) words always resampled, others with probability p"
    defaults: ClassVar[dict[str, Any]] = {"eps": 0.8, "w": 0.9, "p": 0.3}
    fixed_w: ClassVar[float | None] = None
    keeps_words: ClassVar[bool] = True

    def __init__(self, eps: float = 0.8, space=None, policy: Policy | None = None, device: str = "auto", quiet: bool = False, w: float | None = None, p: float | None = None):
        p = self.defaults["p"] if p is None else p
        try:
            p = float(p)
        except (TypeError, ValueError):
            raise ValueError(f"p must be a number in [0, 1] (got {p!r})") from None
        if not (0.0 <= p <= 1.0):
            raise ValueError(f"p (probability of resampling a non-sensitive word) must be in [0, 1] (got {p})")
        self.p = p
        super().__init__(eps, space=space, policy=policy, device=device, quiet=quiet, w=w)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "p": self.p}

    def signature_params(self) -> dict[str, Any]:
        return {"w": self.w, "p": self.p}

    def mechanism_leaks(self) -> list[str]:
        if self.p >= 1.0 or self.w >= 1.0:
            return []
        return [f"santext+ keeps each non-sensitive (frequent) word verbatim with probability 1-p = {1 - self.p:g} "
                f"(w = {self.w:g}: the {1 - self.w:.0%} most frequent words, names among them)"]

    def draw(self, n: int, g: torch.Generator) -> dict[str, torch.Tensor]:
        # two decisions per position, each with its own uniform: resample or keep, then which word
        flip = torch.rand(n, generator=g, dtype=torch.float64)
        u = torch.rand(n, generator=g, dtype=torch.float64)
        return {"flip": flip, "u": u}

    def perturb_rows(self, rows: torch.Tensor, rand: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        resample = self._is_sensitive[rows] | (rand["flip"] < self.p)
        out = rows.clone()
        if bool(resample.any()):
            out[resample] = self.sample(rows[resample], rand["u"][resample])
        return out, {"unchanged": ~resample}


__all__ = ["SanText", "SanTextPlus", "sensitive_rows", "sensitive_size", "BUILD_COUNTS", "CDF_SCALE"]
