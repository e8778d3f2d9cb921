"""The one word tokenizer every text metric and text attack shares, so their numbers compare.

``words(text)``: Unicode word characters (``\\w+``), case-folded. Punctuation and whitespace are not
tokens. This matches how the InferDPT/Cape evaluations count words closely enough to compare trends,
while staying independent of any model's tokenizer (documented in docs/sweep/README.md).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """Case-folded word tokens of ``text`` (NFKC-normalised first)."""
    return _WORD.findall(unicodedata.normalize("NFKC", text or "").casefold())


def ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    """All contiguous n-grams of ``tokens`` (empty when fewer than n tokens)."""
    if n < 1:
        raise ValueError("n must be >= 1")
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def multiset_overlap(a: list[str], b: list[str]) -> int:
    """Size of the multiset intersection of two token lists."""
    ca, cb = Counter(a), Counter(b)
    return sum(min(c, cb[t]) for t, c in ca.items())
