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
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, ClassVar

import numpy as np
import torch

from ppt.spaces.tokens import CASE_MODES, NUMBER, OTHER, PUNCT, SPACE, WORD, Tokens, rebuild

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
        """Action per piece and the reason for it."""
        pol = self.policy
        stop = stopwords_en() if pol.stopwords == "keep" else frozenset()
        actions = np.empty(len(tokens), dtype=np.int8)
        reasons: list[str] = []
        for i, (core, kind, row) in enumerate(zip(tokens.core, tokens.kinds, tokens.rows)):
            if kind == SPACE:
                act, why = KEEP, "whitespace"
            elif kind == PUNCT:
                act, why = (KEEP, "punct") if pol.punct == "keep" else (DROP, "punct")
            elif kind == NUMBER and pol.numbers != "perturb":
                act, why = {"random-digits": (DIGITS, "number"), "drop": (DROP, "number"), "keep": (KEEP, "number")}[pol.numbers]
            elif kind == WORD and core.lower() in stop and TokenMechanism._whole_word(tokens, i):
                act, why = KEEP, "stopword"
            elif row >= 0:
                act, why = PERTURB, "perturbed"
            else:
                act, why = {"drop": (DROP, "oov"), "uniform": (UNIFORM, "oov"), "keep": (KEEP, "oov")}[pol.oov]
            actions[i] = act
            reasons.append(why)
        return actions, reasons

    @staticmethod
    def _whole_word(tokens: Tokens, i: int) -> bool:
        """Does piece i stand alone as a word (a boundary on both sides)? So the "a" of "a|lice" is
        never kept as a stopword. Empty pieces (bare whitespace tokens) are skipped over."""

        def empty(j: int) -> bool:
            return not tokens.lead[j] and not tokens.core[j]

        j = i - 1
        while j >= 0 and empty(j):
            j -= 1
        before = j < 0 or bool(tokens.lead[i]) or tokens.kinds[j] == PUNCT or (tokens.kinds[j] == SPACE and bool(tokens.lead[j]))
        j = i + 1
        while j < len(tokens) and empty(j):
            j += 1
        after = j >= len(tokens) or bool(tokens.lead[j]) or tokens.kinds[j] == PUNCT
        return before and after

    def sanitize_batch(self, texts: list[str], generators: list[torch.Generator]) -> list[Sanitized]:
        toks = [self.space.tokenize(t) for t in texts]
        plans = [self.plan(t) for t in toks]
        counts = [int((a == PERTURB).sum()) for a, _ in plans]
        # each record's randomness from its own generator, in a fixed order: perturbation first
        draws = [self.draw(n, g) for n, g in zip(counts, generators)]
        rows = torch.from_numpy(np.concatenate([t.rows[a == PERTURB] for t, (a, _) in zip(toks, plans)] or [np.empty(0, np.int64)]))
        rand = {k: torch.cat([d[k] for d in draws]) for k in draws[0]} if draws else {}
        if rows.numel():
            new_rows, diag = self.perturb_rows(rows.to(self.device), {k: v.to(self.device) for k, v in rand.items()})
            new_rows = new_rows.cpu().numpy()
            diag = {k: v.cpu() for k, v in diag.items()}
        else:
            new_rows, diag = np.empty(0, np.int64), {}
        out, offset = [], 0
        vocab = self.space.vocab
        for tok, (actions, reasons), n, g in zip(toks, plans, counts, generators):
            mine = new_rows[offset : offset + n]
            my_diag = {k: v[offset : offset + n] for k, v in diag.items()}
            offset += n
            cores: list[str | None] = []
            it = iter(mine.tolist())
            n_uniform = int((actions == UNIFORM).sum())
            uniform_rows = iter(torch.randint(0, self.space.size, (n_uniform,), generator=g).tolist())
            for core, act in zip(tok.core, actions):
                if act == PERTURB:
                    cores.append(vocab[next(it)])
                elif act == KEEP:
                    cores.append(core)
                elif act == DIGITS:
                    cores.append(random_digits(core, g))
                elif act == UNIFORM:
                    cores.append(vocab[next(uniform_rows)])
                else:
                    cores.append(None)
            kept = Counter(r for a, r in zip(actions, reasons) if a in (KEEP,) and r != "whitespace")
            kept.update(r for a, r in zip(actions, reasons) if a == DIGITS)
            dropped = Counter(r for a, r in zip(actions, reasons) if a == DROP)
            extra = self.record_extra(my_diag) if n else {}
            if self.keeps_words:
                # always reported (0 when the record, or the whole batch, had nothing to perturb), so
                # a record's accounting does not depend on what else is in its batch
                unchanged = my_diag.get("unchanged")
                extra.setdefault("kept_by_mechanism", int(unchanged.sum()) if unchanged is not None else 0)
            eps_tok = self.eps_per_token()
            acc = Accounting(
                notion=self.notion,
                eps_per_token=eps_tok,
                n_tokens=int(sum(1 for k in tok.kinds if k != SPACE)),
                n_perturbed=n,
                kept=dict(kept),
                dropped=dict(dropped),
                replaced_uniform=n_uniform,
                composed_eps=n * eps_tok,
                extra=extra,
            )
            out.append(Sanitized(rebuild(tok, cores, case=self.policy.case), acc))
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
