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

import numpy as np

WORD, NUMBER, PUNCT, SPACE, OTHER = "word", "number", "punct", "space", "other"

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

    def __len__(self) -> int:
        return len(self.core)

    @property
    def text(self) -> str:
        return "".join(a + b for a, b in zip(self.lead, self.core))


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


def rebuild(tokens: Tokens, out_core: list[str | None], *, case: str = "sentence") -> str:
    """Rebuild text from per-piece outputs (None = dropped; the original core object = kept).

    Capitalisation of replacements: ``sentence`` capitalises a replacement that starts the text or
    follows . ! ? in the output (derived from the output alone, so it reveals nothing); ``original``
    copies the original word's case pattern (more readable, but leaks which words were capitalised);
    ``vocab`` leaves the vocabulary's form.
    A dropped piece takes its leading whitespace with it, except that whitespace is kept when the next
    surviving piece has none and the dropped piece separated two words (so 'a , b' never glues 'ab').
    """
    parts: list[str] = []
    pending_space = ""
    for lead, core, kind, new in zip(tokens.lead, tokens.core, tokens.kinds, out_core):
        if new is None:
            if lead and not pending_space:
                pending_space = lead
            continue
        if new is not core and new:
            if case == "original":
                new = match_case(new, core)
            elif case == "sentence" and (not parts or "".join(parts[-2:]).rstrip(" ").endswith(_SENTENCE_END)):
                new = new[0].upper() + new[1:]
        sep = lead if lead else ""
        if pending_space and parts and kind != PUNCT:
            # keep a separator between the previous output and this one if the dropped piece had one
            sep = sep or (" " if not parts[-1].endswith((" ", "\n")) else "")
        pending_space = ""
        parts.append(sep + new)
    return "".join(parts).strip() if parts else ""
