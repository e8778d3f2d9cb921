"""The shared interface of token-level mechanisms, and the policies every one of them makes explicit.

A mechanism turns texts into private texts plus an :class:`Accounting` record (what was spent, under
which notion). It never formats output or touches I/O; the CLI stamps the accounting into records.

Token-level mechanisms share one pipeline (:class:`TokenMechanism`): tokenize with the space, decide
per piece what happens to it (:class:`Policy`), draw each record's randomness from that record's own
generator (so results never depend on batching), perturb all positions of the batch at once with
``perturb_rows`` (tensor code), then rebuild readable text.
"""

from __future__ import annotations

import math
import sys
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, ClassVar

import numpy as np
import torch

from ppt.spaces.tokens import (  # noqa: F401  (the kind names are re-exported)
    CASE_MODES,
    NUMBER,
    NUMBER_CODE,
    OTHER,
    PUNCT,
    PUNCT_CODE,
    SPACE,
    SPACE_CODE,
    WORD,
    WORD_CODE,
    Tokens,
    rebuild,
    rebuild_pieces,
)

OOV_POLICIES = ("drop", "uniform", "keep")
NUMBER_POLICIES = ("random-digits", "perturb", "drop", "keep")
PUNCT_POLICIES = ("keep", "drop")
STOPWORD_POLICIES = ("perturb", "keep")
CASE_POLICIES = CASE_MODES


@lru_cache(maxsize=1)
def stopwords_en() -> frozenset[str]:
    """NLTK's 179 English stopwords (shipped as data; NLTK's downloader needs a network)."""
    text = resources.files("ppt.data").joinpath("stopwords_en.txt").read_text()
    return frozenset(w for w in text.split("\n") if w and not w.startswith("#"))


@dataclass(frozen=True)
class Policy:
    """What happens to pieces the mechanism does not perturb by its own rule.

    oov: out-of-vocabulary pieces are dropped, replaced by a uniformly random vocabulary word
         (0-DP for that piece), or kept verbatim (leaks raw text; warned).
    numbers: random digits in the same format (leaks only the format), perturbed like words when the
         space has them, dropped, or kept verbatim (leaks).
    punct: kept (reported) or dropped.
    stopwords: perturbed like any word, or kept (CusText+, Cape); only whole words count.
    case: capitalisation of replacements: from the output's sentences (reveals nothing), copied from the
         original word (readable; leaks the case pattern), or as in the vocabulary.
    """

    oov: str = "drop"
    numbers: str = "random-digits"
    punct: str = "keep"
    stopwords: str = "perturb"
    case: str = "sentence"

    def __post_init__(self) -> None:
        for name, allowed in (("oov", OOV_POLICIES), ("numbers", NUMBER_POLICIES), ("punct", PUNCT_POLICIES), ("stopwords", STOPWORD_POLICIES), ("case", CASE_POLICIES)):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"--{name} must be one of {', '.join(allowed)} (got {value!r})")

    def warn_leaks(self) -> None:
        for msg in self.leaks():
            print(f"ppt: warning: {msg}: this lets raw information through, outside the accounting", file=sys.stderr)

    def leaks(self) -> list[str]:
        """Which settings let raw text through (for a stderr warning and the stamp)."""
        out = []
        if self.oov == "keep":
            out.append("out-of-vocabulary tokens are kept verbatim (--oov keep)")
        if self.numbers == "keep":
            out.append("numbers are kept verbatim (--numbers keep)")
        if self.case == "original":
            out.append("replacements copy the original words' capitalisation (--case original)")
        return out


# actions for each piece
PERTURB, KEEP, DROP, UNIFORM, DIGITS = 0, 1, 2, 3, 4
# why a piece gets its action (``plan`` names them; the accounting counts kept and dropped pieces by them)
REASONS = ("whitespace", "punct", "number", "stopword", "perturbed", "oov")
R_WHITESPACE, R_PUNCT, R_NUMBER, R_STOPWORD, R_PERTURBED, R_OOV = range(len(REASONS))
_REASON_NAMES = np.array(REASONS, dtype=object)
_POLICY_ACTION = {"drop": DROP, "uniform": UNIFORM, "keep": KEEP, "random-digits": DIGITS}


@dataclass
class Accounting:
    """The privacy spent on one record, under which notion, and what was kept verbatim and why."""

    notion: str
    eps_per_token: float
    n_tokens: int
    n_perturbed: int
    kept: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    replaced_uniform: int = 0
    composed_eps: float = 0.0
    delta: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(d.pop("extra"))
        return d


@dataclass
class Sanitized:
    text: str
    accounting: Accounting


def check_eps(eps: float) -> float:
    try:
        eps = float(eps)
    except (TypeError, ValueError):
        raise ValueError(f"eps must be a number (got {eps!r})") from None
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be positive and finite (got {eps})")
    return eps


class Mechanism(ABC):
    """A text mechanism: validated parameters, batch sanitization, optional precomputed tables."""

    name: ClassVar[str]
    notion: ClassVar[str]
    summary: ClassVar[str] = ""
    defaults: ClassVar[dict[str, Any]] = {}
    default_eps: ClassVar[float] = 6.0  # a subclass's defaults["eps"], when given, takes its place
    # True: seeded output must be bit-identical whatever the batching (DESIGN's randomness contract).
    # sanitize_records clears it on unseeded runs, letting a mechanism batch for speed at the cost of
    # batch-dependent float rounding (Cape's context model).
    reproducible: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "eps" in cls.__dict__.get("defaults", {}):
            cls.default_eps = float(cls.defaults["eps"])

    def __init__(self, eps: float, **params: Any):
        if params:
            raise TypeError(f"{self.name}: unknown parameter(s) {', '.join(sorted(params))}")
        self.eps = check_eps(eps)

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """Every parameter that determines the output distribution (for the stamp)."""

    @abstractmethod
    def sanitize_batch(self, texts: list[str], generators: list[torch.Generator]) -> list[Sanitized]: ...

    def precompute(self, quiet: bool = False) -> list:
        """Build the cached tables this mechanism uses; returns their artifacts."""
        return []

    def stamp(self) -> dict[str, Any]:
        return {"mechanism": self.name, "notion": self.notion, "params": self.params()}


def random_digits(core: str, g: torch.Generator) -> str:
    """Same format, fresh uniformly random digits (a leading digit stays non-zero)."""
    digits = [i for i, c in enumerate(core) if c.isdigit()]
    if not digits:
        return core
    draws = torch.randint(0, 10, (len(digits),), generator=g).tolist()
    chars = list(core)
    for j, (i, d) in enumerate(zip(digits, draws)):
        if j == 0 and len(digits) > 1 and d == 0:
            d = 1 + int(torch.randint(0, 9, (1,), generator=g))
        chars[i] = str(d)
    return "".join(chars)


class TokenMechanism(Mechanism):
    """Per-token mechanisms over an embedding space, with explicit policies.

    Subclasses implement ``draw`` (one record's randomness for n perturbed positions, drawn from that
    record's generator) and ``perturb_rows`` (all perturbed positions of a batch at once).
    """

    default_policy: ClassVar[Policy] = Policy()
    keeps_words: ClassVar[bool] = False  # True when the mechanism itself may keep a word (SanText+ p)

    def __init__(self, eps: float, space=None, policy: Policy | None = None, device: str = "auto", quiet: bool = False):
        super().__init__(eps)
        self.policy = policy or self.default_policy
        self.quiet = quiet
        self.space = space if space is not None else self.load_default_space(device, quiet)
        self.device = self.space.device
        self.policy.warn_leaks()

    def load_default_space(self, device: str, quiet: bool):
        from ppt.spaces import load_space

        return load_space(self.default_space, device=device, quiet=quiet)

    default_space: ClassVar[str] = "cl100k-minilm"

    # ---- per-mechanism parts ----------------------------------------------------------------------

    @abstractmethod
    def draw(self, n: int, g: torch.Generator) -> dict[str, torch.Tensor]:
        """Randomness for n perturbed positions of one record (first dimension n)."""

    @abstractmethod
    def perturb_rows(self, rows: torch.Tensor, rand: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """New rows for all perturbed positions of a batch, plus per-position diagnostics."""

    def eps_per_token(self) -> float:
        return self.eps

    def record_extra(self, diag: dict[str, torch.Tensor]) -> dict[str, Any]:
        """Per-record additions to the accounting from this record's diagnostics."""
        return {}

    # ---- shared pipeline ----------------------------------------------------------------------------

    def plan(self, tokens: Tokens) -> tuple[np.ndarray, list[str]]:
        """Action per piece and the reason for it (uses only ``self.policy``: Cape borrows it)."""
        actions, why = TokenMechanism.plan_codes(self, tokens.kind_codes(), tokens.rows, tokens.lead, tokens.core)
        return actions, _REASON_NAMES[why].tolist()

    def plan_codes(
        self, codes: np.ndarray, rows: np.ndarray, lead: list[str], core: list[str], starts: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``plan`` on arrays: actions and reason codes (``REASONS``), both int8 [n].

        The pieces of several texts can be planned at once, concatenated, with ``starts`` the index of
        each text's first piece (whole-word stopword checks never look across texts).
        """
        pol = self.policy
        in_vocab = np.asarray(rows) >= 0
        actions = np.where(in_vocab, PERTURB, _POLICY_ACTION[pol.oov]).astype(np.int8)
        why = np.where(in_vocab, R_PERTURBED, R_OOV).astype(np.int8)
        # kinds are exclusive; the stopword rule applies to words only: the order of these is the rules' priority
        if pol.stopwords == "keep":
            stop = TokenMechanism._stopwords(codes, lead, core, starts)
            actions[stop], why[stop] = KEEP, R_STOPWORD
        if pol.numbers != "perturb":
            num = codes == NUMBER_CODE
            actions[num], why[num] = _POLICY_ACTION[pol.numbers], R_NUMBER
        punct = codes == PUNCT_CODE
        actions[punct], why[punct] = (KEEP if pol.punct == "keep" else DROP), R_PUNCT
        space = codes == SPACE_CODE
        actions[space], why[space] = KEEP, R_WHITESPACE
        return actions, why

    @staticmethod
    def _stopwords(codes: np.ndarray, lead: list[str], core: list[str], starts: np.ndarray | None) -> np.ndarray:
        """Word pieces that are English stopwords standing alone as words (a boundary on both sides),
        so the "a" of "a|lice" is never kept as a stopword. Empty pieces (bare whitespace tokens) are
        skipped over; the start and end of each text are boundaries."""
        n = len(codes)
        out = np.zeros(n, dtype=bool)
        stop = stopwords_en()
        cand = np.flatnonzero(codes == WORD_CODE)
        cand = cand[np.fromiter((core[i].lower() in stop for i in cand.tolist()), dtype=bool, count=cand.size)]
        if not cand.size:
            return out
        has_lead = np.fromiter(map(bool, lead), dtype=bool, count=n)
        nonempty = has_lead | np.fromiter(map(bool, core), dtype=bool, count=n)
        pos = np.arange(n)
        starts = np.zeros(1, dtype=np.int64) if starts is None else np.asarray(starts, dtype=np.int64)
        text = np.searchsorted(starts, cand, side="right") - 1
        first = starts[text]
        end = np.append(starts, n)[text + 1]
        # nearest non-empty piece before / after each candidate (-1 / n when none)
        before_idx = np.maximum.accumulate(np.where(nonempty, pos, -1))
        after_idx = np.minimum.accumulate(np.where(nonempty, pos, n)[::-1])[::-1]
        prev = np.where(cand > 0, before_idx[np.maximum(cand - 1, 0)], -1)
        nxt = np.where(cand + 1 < n, after_idx[np.minimum(cand + 1, n - 1)], n)
        has_prev, has_next = prev >= first, nxt < end
        p, q = np.where(has_prev, prev, 0), np.where(has_next, nxt, 0)
        before = ~has_prev | has_lead[cand] | (codes[p] == PUNCT_CODE) | ((codes[p] == SPACE_CODE) & has_lead[p])
        after = ~has_next | has_lead[q] | (codes[q] == PUNCT_CODE)
        out[cand[before & after]] = True
        return out

    def draw_batch(self, counts: list[int], generators: list[torch.Generator]) -> dict[str, torch.Tensor]:
        """Every record's randomness (``draw``, from that record's generator), concatenated."""
        draws = [self.draw(n, g) for n, g in zip(counts, generators)]
        return {k: torch.cat([d[k] for d in draws]) for k in draws[0]} if draws else {}

    def draw_and_perturb(
        self, rows: np.ndarray, counts: list[int], generators: list[torch.Generator]
    ) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
        """Draw every record's randomness (``draw_batch``; also for records with nothing to perturb),
        then perturb the batch's positions ``rows`` (records' positions in order): new rows and
        diagnostics, on the CPU."""
        rand = self.draw_batch(counts, generators)
        if not rows.size:
            return np.empty(0, np.int64), {}
        new_rows, diag = self.perturb_rows(torch.from_numpy(rows).to(self.device), {k: v.to(self.device) for k, v in rand.items()})
        return new_rows.cpu().numpy(), {k: v.cpu() for k, v in diag.items()}

    def record_extras(self, diag: dict[str, torch.Tensor], counts: list[int]) -> list[dict[str, Any]]:
        """``record_extra`` of each record, from the batch's diagnostics (records' positions in order)."""
        out, offset = [], 0
        for n in counts:
            out.append(self.record_extra({k: v[offset : offset + n] for k, v in diag.items()}) if n else {})
            offset += n
        return out

    def sanitize_batch(self, texts: list[str], generators: list[torch.Generator]) -> list[Sanitized]:
        # the batch's pieces, concatenated: every per-piece step below is an array operation
        tb = self.space.tokenize_batch(texts)
        n_texts, bounds, core, codes, rows = len(tb), tb.bounds.tolist(), tb.core, tb.codes, tb.rows
        rec = tb.text_index
        actions, why = self.plan_codes(codes, rows, tb.lead, core, tb.bounds[:-1])
        perturb = actions == PERTURB
        counts = np.bincount(rec[perturb], minlength=n_texts).tolist()
        # each record's randomness from its own generator, in a fixed order: perturbation first
        new_rows, diag = self.draw_and_perturb(rows[perturb], counts, generators)
        # per piece: its output text (the original object when kept, None when dropped)
        vocab = self.space.vocab_array
        out_core = np.empty(len(core), dtype=object)
        out_core[:] = core
        out_core[perturb] = vocab[new_rows]
        out_core[actions == DROP] = None
        # then, per record: uniformly random replacements, then random digits (front to back)
        uniform = np.flatnonzero(actions == UNIFORM)
        n_uniform = np.bincount(rec[uniform], minlength=n_texts).tolist()
        for b in np.flatnonzero(n_uniform).tolist():
            draws = torch.randint(0, self.space.size, (n_uniform[b],), generator=generators[b]).numpy()
            out_core[uniform[rec[uniform] == b]] = vocab[draws]
        for i in np.flatnonzero(actions == DIGITS).tolist():
            out_core[i] = random_digits(core[i], generators[rec[i]])
        kept = _reason_counts(rec, why, (actions == KEEP) & (why != R_WHITESPACE), n_texts)
        for k, more in zip(kept, _reason_counts(rec, why, actions == DIGITS, n_texts)):
            for r, c in more.items():
                k[r] = k.get(r, 0) + c
        dropped = _reason_counts(rec, why, actions == DROP, n_texts)
        n_tokens = np.bincount(rec[codes != SPACE_CODE], minlength=n_texts).tolist()
        extras = self.record_extras(diag, counts)
        if self.keeps_words:
            # always reported (0 when the record, or the whole batch, had nothing to perturb), so
            # a record's accounting does not depend on what else is in its batch
            unchanged = diag.get("unchanged")
            kept_by = np.zeros(n_texts, np.int64) if unchanged is None else np.bincount(
                rec[perturb], weights=unchanged.numpy().astype(np.float64), minlength=n_texts).astype(np.int64)
            for extra, k in zip(extras, kept_by.tolist()):
                extra.setdefault("kept_by_mechanism", k)
        eps_tok = self.eps_per_token()
        out_list = out_core.tolist()
        out = []
        for b in range(n_texts):
            n, lo, hi = counts[b], bounds[b], bounds[b + 1]
            acc = Accounting(
                notion=self.notion,
                eps_per_token=eps_tok,
                n_tokens=n_tokens[b],
                n_perturbed=n,
                kept=kept[b],
                dropped=dropped[b],
                replaced_uniform=n_uniform[b],
                composed_eps=n * eps_tok,
                extra=extras[b],
            )
            text = rebuild_pieces(tb.lead[lo:hi], core[lo:hi], tb.kinds[lo:hi], out_list[lo:hi], case=self.policy.case)
            out.append(Sanitized(text, acc))
        return out


def _reason_counts(rec: np.ndarray, why: np.ndarray, mask: np.ndarray, n_records: int) -> list[dict[str, int]]:
    """Per record, how many of its pieces under ``mask`` have each reason (in order of first occurrence)."""
    out: list[dict[str, int]] = [{} for _ in range(n_records)]
    idx = np.flatnonzero(mask)
    if idx.size:
        keys, first, count = np.unique(rec[idx] * len(REASONS) + why[idx], return_index=True, return_counts=True)
        for j in np.argsort(first, kind="stable").tolist():
            b, r = divmod(int(keys[j]), len(REASONS))
            out[b][REASONS[r]] = int(count[j])
    return out


def gumbel_from_uniform(u: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise from uniforms in (0, 1)."""
    tiny = torch.finfo(u.dtype).tiny
    return -torch.log(-torch.log(u.clamp(min=tiny, max=1 - 1e-7)))


def sample_from_logits_inverse_cdf(logits: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Sample one column per row of ``logits`` [n, m] (-inf = excluded) with one uniform per row.

    Inverse CDF needs one uniform per position regardless of how many candidates the batch pads to,
    so a record's draws (and thus its output) do not depend on what else is in the batch.
    """
    p = torch.softmax(logits.double(), dim=1)
    cdf = p.cumsum(1)
    # side="right" finds the first column whose cdf exceeds u*total: never a zero-probability column
    target = (u.double().clamp(0.0, 1.0 - 1e-16) * cdf[:, -1]).unsqueeze(1)
    idx = torch.searchsorted(cdf, target, right=True).squeeze(1)
    return idx.clamp_(max=logits.shape[1] - 1)


__all__ = [
    "Accounting", "Sanitized", "Policy", "Mechanism", "TokenMechanism", "check_eps", "stopwords_en",
    "sample_from_logits_inverse_cdf", "gumbel_from_uniform", "random_digits",
    "PERTURB", "KEEP", "DROP", "UNIFORM", "DIGITS", "OTHER",
]
