"""What happens to each piece a mechanism does not perturb by its own rule, and why.

Why a module: every token mechanism (and Cape) makes the same explicit choices for out-of-vocabulary
pieces, numbers, punctuation, stopwords and capitalisation. The :class:`Policy` names them, and
:func:`plan_codes` turns a batch's pieces into an action and a reason code each, with array
operations; the reasons are what the accounting counts kept and dropped pieces by.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from ppt.log import LeakWarning, warn
from ppt.spaces.tokens import CASE_MODES, NUMBER_CODE, PUNCT_CODE, SPACE_CODE, WORD_CODE

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
        for name, allowed in (
            ("oov", OOV_POLICIES),
            ("numbers", NUMBER_POLICIES),
            ("punct", PUNCT_POLICIES),
            ("stopwords", STOPWORD_POLICIES),
            ("case", CASE_POLICIES),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"--{name} must be one of {', '.join(allowed)} (got {value!r})")

    def warn_leaks(self) -> None:
        for msg in self.leaks():
            warn(f"{msg}: this lets raw information through, outside the accounting", LeakWarning)

    def leaks(self) -> list[str]:
        """Which settings let raw text through (for a LeakWarning and the stamp)."""
        out = []
        if self.oov == "keep":
            out.append("out-of-vocabulary tokens are kept verbatim (--oov keep)")
        if self.numbers == "keep":
            out.append("numbers are kept verbatim (--numbers keep)")
        if self.stopwords == "keep":
            out.append("stopwords (NLTK's 179: she, him, his, I, ...) are kept verbatim (--stopwords keep)")
        if self.case == "original":
            out.append("replacements copy the original words' capitalisation (--case original)")
        return out


# actions for each piece
PERTURB, KEEP, DROP, UNIFORM, DIGITS = 0, 1, 2, 3, 4
# why a piece gets its action (``plan`` names them; the accounting counts kept and dropped pieces by them)
# "pos" and "important": words ProSan keeps because of their part of speech / their importance to the task
# "undetected": text outside every detected span under --protect detected (ppt.mechanisms.protect)
REASONS = ("whitespace", "punct", "number", "stopword", "perturbed", "oov", "pos", "important", "undetected")
R_WHITESPACE, R_PUNCT, R_NUMBER, R_STOPWORD, R_PERTURBED, R_OOV, R_POS, R_IMPORTANT, R_UNDETECTED = range(len(REASONS))
REASON_NAMES = np.array(REASONS, dtype=object)
_POLICY_ACTION = {"drop": DROP, "uniform": UNIFORM, "keep": KEEP, "random-digits": DIGITS}


def plan_codes(
    policy: Policy,
    codes: np.ndarray,
    rows: np.ndarray,
    lead: list[str],
    core: list[str],
    starts: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Action and reason code (``REASONS``) of every piece, both int8 [n], under ``policy``.

    The pieces of several texts can be planned at once, concatenated, with ``starts`` the index of
    each text's first piece (whole-word stopword checks never look across texts).
    """
    pol = policy
    in_vocab = np.asarray(rows) >= 0
    actions = np.where(in_vocab, PERTURB, _POLICY_ACTION[pol.oov]).astype(np.int8)
    why = np.where(in_vocab, R_PERTURBED, R_OOV).astype(np.int8)
    # kinds are exclusive; the stopword rule applies to words only: the order of these is the rules' priority
    if pol.stopwords == "keep":
        stop = whole_word_stopwords(codes, lead, core, starts)
        actions[stop], why[stop] = KEEP, R_STOPWORD
    if pol.numbers != "perturb":
        num = codes == NUMBER_CODE
        actions[num], why[num] = _POLICY_ACTION[pol.numbers], R_NUMBER
    punct = codes == PUNCT_CODE
    actions[punct], why[punct] = (KEEP if pol.punct == "keep" else DROP), R_PUNCT
    space = codes == SPACE_CODE
    actions[space], why[space] = KEEP, R_WHITESPACE
    return actions, why


def whole_word_stopwords(codes: np.ndarray, lead: list[str], core: list[str], starts: np.ndarray | None) -> np.ndarray:
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


__all__ = [
    "Policy",
    "stopwords_en",
    "plan_codes",
    "whole_word_stopwords",
    "REASONS",
    "REASON_NAMES",
    "PERTURB",
    "KEEP",
    "DROP",
    "UNIFORM",
    "DIGITS",
    "OOV_POLICIES",
    "NUMBER_POLICIES",
    "PUNCT_POLICIES",
    "STOPWORD_POLICIES",
    "CASE_POLICIES",
]
