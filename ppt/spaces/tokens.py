"""Tokenized text that can be rebuilt readably after some pieces are replaced or dropped.

A text is split into pieces whose concatenation is exactly the text. Each piece carries its leading
whitespace separately from its core, the row of the embedding space it maps to (-1 when out of
vocabulary) and a coarse kind, so mechanisms can apply explicit policies (numbers, punctuation,
stopwords, OOV) and the detokenizer can put a replacement word where the original word stood,
with the original's spacing and capitalisation, instead of joining BPE pieces with spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import chain

import numpy as np

WORD, NUMBER, PUNCT, SPACE, OTHER = "word", "number", "punct", "space", "other"
# kinds as small integers (Tokens.codes), for vectorized policies: KINDS[code] is the kind's name
KINDS = (WORD, NUMBER, PUNCT, SPACE, OTHER)
KIND_CODE = {k: i for i, k in enumerate(KINDS)}
WORD_CODE, NUMBER_CODE, PUNCT_CODE, SPACE_CODE, OTHER_CODE = range(len(KINDS))
_KIND_NAMES = np.array(KINDS, dtype=object)

_NUMBER_RE = re.compile(r"^[+-]?(\d+([.,]\d+)*|\d*[.,]\d+)%?$")
# ASCII punctuation and typographic quotes/dashes/ellipsis; emoji, currency and other symbols are
# "other" and go through the out-of-vocabulary policy instead of being kept as punctuation.
_PUNCT_RE = re.compile(r"^[!-/:-@\[-`{-~“”‘’–—…«»]+$")
_WORD_RE = re.compile(r"^[^\W\d_]+(['’][^\W\d_]+)?$")


def kind_of(core: str) -> str:
    """Classify a piece's core text (whitespace already stripped: the reference code's numeric check
    ran before stripping the space and so missed ' 2024')."""
    if not core:
        return SPACE
    if _NUMBER_RE.match(core):
        return NUMBER
    if _WORD_RE.match(core):
        return WORD
    if _PUNCT_RE.match(core):
        return PUNCT
    return OTHER


def kind_codes(kinds: list[str]) -> np.ndarray:
    """int8 codes of a list of kind names."""
    return np.fromiter(map(KIND_CODE.__getitem__, kinds), dtype=np.int8, count=len(kinds))


def kind_names(codes: np.ndarray) -> list[str]:
    """The kind names of int8 codes (the inverse of :func:`kind_codes`)."""
    return _KIND_NAMES[codes].tolist()


def split_lead(piece: str) -> tuple[str, str]:
    """('  ', 'word') for '  word'."""
    core = piece.lstrip()
    return piece[: len(piece) - len(core)], core


@dataclass
class Tokens:
    """Pieces of one text: ``''.join(lead[i] + core[i]) == text``."""

    lead: list[str]
    core: list[str]
    rows: np.ndarray  # int64 [n]; -1 = out of the space's vocabulary
    kinds: list[str]
    ids: np.ndarray | None = None  # tokenizer ids when the space has a subword tokenizer
    codes: np.ndarray | None = None  # int8 [n] kind codes (KIND_CODE) when the tokenizer supplies them

    def __len__(self) -> int:
        return len(self.core)

    def kind_codes(self) -> np.ndarray:
        """The kinds as int8 codes (``KIND_CODE``): the tokenizer's, or derived from ``kinds``."""
        if self.codes is not None and len(self.codes) == len(self.kinds):
            return self.codes
        return kind_codes(self.kinds)

    @property
    def text(self) -> str:
        return "".join(a + b for a, b in zip(self.lead, self.core))


@dataclass
class TokenBatch:
    """The pieces of several texts, concatenated: text i's pieces are ``bounds[i]:bounds[i + 1]``.

    Mechanisms plan, perturb and count over a whole batch with array operations on this form.
    """

    lead: list[str]
    core: list[str]
    kinds: list[str]
    rows: np.ndarray  # int64 [n]
    codes: np.ndarray  # int8 [n]
    bounds: np.ndarray  # int64 [texts + 1]

    def __len__(self) -> int:
        return len(self.bounds) - 1

    @classmethod
    def concat(cls, tokens: list[Tokens]) -> TokenBatch:
        lens = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        return cls(
            lead=list(chain.from_iterable(t.lead for t in tokens)),
            core=list(chain.from_iterable(t.core for t in tokens)),
            kinds=list(chain.from_iterable(t.kinds for t in tokens)),
            rows=np.concatenate([t.rows.astype(np.int64, copy=False) for t in tokens] + [np.empty(0, np.int64)]),
            codes=np.concatenate([t.kind_codes() for t in tokens] + [np.empty(0, np.int8)]),
            bounds=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        )

    @property
    def text_index(self) -> np.ndarray:
        """The text each piece belongs to (int64 [n])."""
        return np.repeat(np.arange(len(self)), np.diff(self.bounds))


def match_case(replacement: str, original: str) -> str:
    """Carry the original's capitalisation onto a replacement from a lower-cased vocabulary."""
    if not original or not replacement:
        return replacement
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[0].isupper():
        return replacement[0].upper() + replacement[1:]
    return replacement


CASE_MODES = ("sentence", "original", "vocab")
_SENTENCE_END = (".", "!", "?", "\n")
_SENTENCE_END_CHARS = frozenset(_SENTENCE_END)


def rebuild(tokens: Tokens, out_core: list[str | None], *, case: str = "sentence") -> str:
    """Rebuild text from per-piece outputs (None = dropped; the original core object = kept).

    Capitalisation of replacements: ``sentence`` capitalises a replacement that starts the text or
    follows . ! ? in the output (derived from the output alone, so it reveals nothing); ``original``
    copies the original word's case pattern (more readable, but leaks which words were capitalised);
    ``vocab`` leaves the vocabulary's form.
    A dropped piece takes its leading whitespace with it, except that whitespace is kept when the next
    surviving piece has none and the dropped piece separated two words (so 'a , b' never glues 'ab').
    """
    return rebuild_pieces(tokens.lead, tokens.core, tokens.kinds, out_core, case=case)


def rebuild_pieces(
    lead: list[str],
    core: list[str],
    kinds: list[str],
    out_core: list[str | None],
    *,
    case: str = "sentence",
    parts_out: list[str] | None = None,
) -> str:
    """:func:`rebuild` on one text's pieces given as lists.

    ``parts_out``, when given, is extended with the output's parts before the final strip: one per piece
    that is not dropped, its (possibly adjusted) leading whitespace and output core (so a caller can
    find where each piece landed in the text without re-tokenizing it)."""
    parts: list[str] = []
    append = parts.append
    sentence, original = case == "sentence", case == "original"
    ends = _SENTENCE_END_CHARS
    pending = False  # a dropped piece since the last output had leading whitespace
    for lead_i, core_i, kind, new in zip(lead, core, kinds, out_core):
        if new is None:
            pending = pending or bool(lead_i)
            continue
        if new is not core_i and new:
            if original:
                new = match_case(new, core_i)
            elif sentence:
                # capitalise at the start, or when the last two outputs (trailing spaces aside) end a sentence
                if not parts:
                    cap = True
                elif last := parts[-1].rstrip(" "):
                    cap = last[-1] in ends
                else:
                    prev = parts[-2].rstrip(" ") if len(parts) > 1 else ""
                    cap = bool(prev) and prev[-1] in ends
                if cap:
                    new = new[0].upper() + new[1:]
        if pending:
            # keep a separator between the previous output and this one if the dropped piece had one
            if not lead_i and parts and kind != PUNCT:
                lead_i = "" if parts[-1].endswith((" ", "\n")) else " "
            pending = False
        append(lead_i + new)
    if parts_out is not None:
        parts_out.extend(parts)
    return "".join(parts).strip() if parts else ""
