"""A detector for tests that gives typed spans without spaCy or presidio: listed words as names, towns and
health conditions in turn, and every run of digits as a DATE."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ppt.detect.base import Span, merge_spans
from ppt.detect.lists import phrase_pattern

KINDS = ("PERSON", "GPE", "HEALTH")
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")


class KindDetector:
    def __init__(self, words: Sequence[str], kinds: Sequence[str] = KINDS) -> None:
        self.kind_of = {w.lower(): kinds[i % len(kinds)] for i, w in enumerate(dict.fromkeys(words))}
        self.pattern = phrase_pattern(list(self.kind_of))
        self.signature = "test-kinds"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        out = []
        for t in texts:
            spans = [Span(m.start(), m.end(), "DATE") for m in _DIGITS.finditer(t)]
            if self.pattern is not None:
                spans += [Span(m.start(), m.end(), self.kind_of[m.group().lower()]) for m in self.pattern.finditer(t)]
            out.append(merge_spans(spans))
        return out


__all__ = ["KindDetector"]
