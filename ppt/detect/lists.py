"""The user's deny-list: every occurrence of a listed word or phrase, case-insensitive, on word boundaries."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ppt.detect.base import Span


def phrase_pattern(phrases: Sequence[str]) -> re.Pattern | None:
    """Every occurrence of any phrase, case-insensitive, on word boundaries, longest first (so "New York City"
    wins over "New York"); None for no phrase. ``ppt restore`` finds surrogates with it too."""
    items = sorted({p for p in phrases if p}, key=len, reverse=True)
    if not items:
        return None
    return re.compile(rf"(?<!\w)(?:{'|'.join(re.escape(p) for p in items)})(?!\w)", re.IGNORECASE)


class PhraseDetector:
    """The listed phrases, as one compiled alternation (:func:`phrase_pattern`)."""

    def __init__(self, phrases: Sequence[str]) -> None:
        # the list is the user's secret (often the very names to hide): the signature says only that one is used,
        # never anything derived from its content (an unkeyed hash of one name is found by trying names)
        self.signature = "deny"
        self.pattern = phrase_pattern(phrases)

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        if self.pattern is None:
            return [[] for _ in texts]
        return [[Span(m.start(), m.end(), "DENY") for m in self.pattern.finditer(t)] for t in texts]
