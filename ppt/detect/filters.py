"""Spans a detector marks that say nothing about a person, dropped before replacement.

Why: a statistical NER labels durations and spans of time as DATE ("a week", "the opening hours", "2 weeks",
"the 1990s"); replacing them costs the prompt its meaning (a question about a week-long trip) and protects no
one. What is kept: a date with a day or a month ("March 3", "3/4/1987", "late October"), a year (a year of
birth or of an event in a life reads the same as a historical one), a time of day ("at 9:30"). The rules read
the span's own words only, so the same span is kept or dropped in any prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ppt.detect.base import Span

VERSION = "2"
TIME_KINDS = frozenset({"DATE", "TIME", "DATE_TIME"})
_UNIT = r"(?:seconds?|minutes?|hours?|days?|nights?|weeks?|weekends?|fortnights?|months?|years?|decades?|centur(?:y|ies)|season|semester|term|quarter)"
_AMOUNT = r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|few|several|many|couple\s+of|\d+(?:[.,]\d+)?|\d+-\d+)"
# durations and relative spans: "a week", "the week", "2 weeks", "the opening hours", "the past few years"
DURATION = re.compile(
    rf"^(?:(?:the|a|an|this|that|next|last|past|each|every|per|first|second|final|coming|previous|same|whole|"
    rf"entire|few|other|opening|business|working|school|summer|winter|spring|autumn|fall|holiday|morning|"
    rf"evening|night|day)\s+)*(?:{_AMOUNT}\s+)?(?:more\s+|extra\s+|full\s+)?{_UNIT}(?:\s+(?:ago|later|long|"
    rf"old|away|earlier|before|after))?$",
    re.IGNORECASE,
)
RELATIVE = re.compile(
    r"^(?:today|tonight|tomorrow|yesterday|now|daily|weekly|monthly|annually|yearly|nightly|"
    r"recently|currently|the\s+(?:weekend|morning|afternoon|evening|night|day|time))$",
    re.IGNORECASE,
)
DECADE = re.compile(r"^(?:the\s+)?(?:(?:early|mid|late)[- ]?)?(?:1[0-9]|20)?\d0'?s$", re.IGNORECASE)


def impersonal(text: str, span: Span) -> bool:
    """Whether ``span`` is a time expression that names no moment of a person's life (module docstring)."""
    if span.kind not in TIME_KINDS:
        return False
    value = " ".join(text[span.start : span.end].split())
    if DURATION.match(value) or RELATIVE.match(value) or DECADE.match(value):
        return True
    return False


def drop_impersonal(text: str, spans: Sequence[Span]) -> list[Span]:
    """``spans`` without the :func:`impersonal` ones."""
    return [s for s in spans if not impersonal(text, s)]
