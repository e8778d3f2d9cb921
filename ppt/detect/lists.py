"""The user's deny-list: every occurrence of a listed word or phrase, case-insensitive, on word boundaries."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ppt.detect.base import Span, list_tag


class PhraseDetector:
    """One compiled alternation of the listed phrases (longest first, so "New York City" wins over "New York")."""

    def __init__(self, phrases: Sequence[str]) -> None:
        items = sorted({p for p in phrases if p}, key=len, reverse=True)
        self.signature = f"deny#{list_tag(items)}"
        body = "|".join(re.escape(p) for p in items)
        self.pattern = re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE) if items else None

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        if self.pattern is None:
            return [[] for _ in texts]
        return [[Span(m.start(), m.end(), "DENY") for m in self.pattern.finditer(t)] for t in texts]
