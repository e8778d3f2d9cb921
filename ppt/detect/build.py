"""The detector of a run: the user's deny-list plus library detectors, propagated to every other occurrence of a
detected value in the record (:func:`ppt.detect.base.propagate`), minus the allow-list, merged."""

from __future__ import annotations

from collections.abc import Sequence

from ppt.detect.base import (
    PROPAGATION,
    Detector,
    Span,
    merge_spans,
    propagate,
    read_list,
    snap_to_words,
    widen_organisations,
)
from ppt.detect.filters import VERSION as FILTERS
from ppt.detect.filters import drop_impersonal

# in the order their spans win where two detectors mark the same start: an address before the town in it, a
# named entity's label before the name gazetteer's PERSON
DETECTORS = ("patterns", "addresses", "ner", "names", "categories")


class Combined:
    """Several detectors' spans, grown to whole words (:func:`~ppt.detect.base.snap_to_words`) and whole names
    (a part's ``widen``), without time spans that name no moment of a life (:mod:`ppt.detect.filters`), each
    detected value marked at its other occurrences in the record too (:func:`~ppt.detect.base.propagate`; the
    signature says so), merged; spans whose text is on the allow-list are dropped (before and after the
    propagation)."""

    def __init__(
        self,
        parts: Sequence[Detector],
        allow: frozenset[str] = frozenset(),
        keep_kinds: Sequence[str] = (),
    ) -> None:
        self.parts = list(parts)
        self.allow = allow
        self.keep_kinds = frozenset(k.upper() for k in keep_kinds)
        # parts that grow other detectors' spans (a name marked in part) and tell ordinary words from names
        self.wideners = [p for p in self.parts if hasattr(p, "widen")]
        self.ordinary = next((p.ordinary for p in self.parts if hasattr(p, "ordinary")), None)
        names = "+".join(p.signature for p in self.parts)
        allowed = "-allow" if allow else ""  # that a list is used; its content is the user's secret
        kept = f"-keep:{'.'.join(sorted(self.keep_kinds))}" if self.keep_kinds else ""  # kinds are public
        self.signature = f"{names}{allowed}{kept}-propagate:{PROPAGATION}-drop:impersonal-times.{FILTERS}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        found: list[list[Span]] = [[] for _ in texts]
        for part in self.parts:
            for i, spans in enumerate(part.detect(texts)):
                found[i].extend(spans)
        out = []
        for text, spans in zip(texts, found):
            spans = widen_organisations(text, drop_impersonal(text, snap_to_words(text, spans)))
            for part in self.wideners:  # a name marked in part by one detector is replaced whole
                spans = part.widen(text, spans)
            if self.keep_kinds:  # the user keeps these kinds verbatim (stated in the signature)
                spans = [sp for sp in spans if sp.kind not in self.keep_kinds]
            spans = propagate(text, self._allowed(text, spans), self.ordinary)
            out.append(merge_spans(snap_to_words(text, self._allowed(text, spans))))
        return out

    def _allowed(self, text: str, spans: list[Span]) -> list[Span]:
        return [s for s in spans if text[s.start : s.end].strip().lower() not in self.allow] if self.allow else spans


def build_detector(
    names: Sequence[str], *, deny: str | None = None, allow: str | None = None, keep_kinds: Sequence[str] = ()
) -> Combined:
    """The detectors ``names`` (of :data:`DETECTORS`) plus the user's deny-list, minus the allow-list and the
    kinds ``keep_kinds`` (kept verbatim: ``ORG`` keeps organisations)."""
    from ppt.io import ExitCode, PptError

    unknown = [n for n in names if n not in DETECTORS]
    if unknown:
        raise PptError(
            f"unknown detector(s): {', '.join(unknown)}", ExitCode.USAGE, hint=f"choose from {', '.join(DETECTORS)}"
        )
    from ppt.detect.requirements import require

    require(names)  # everything missing, for every detector, in one error with one install command
    parts: list[Detector] = []
    if deny:
        from ppt.detect.lists import PhraseDetector

        parts.append(PhraseDetector(read_list(deny, "deny-list")))
    for name in sorted(dict.fromkeys(names), key=DETECTORS.index):
        if name == "patterns":
            from ppt.detect.patterns import PatternDetector

            parts.append(PatternDetector())
        elif name == "ner":
            from ppt.detect.ner import NerDetector

            parts.append(NerDetector())
        elif name == "categories":
            from ppt.detect.categories import DEFAULT_CATEGORIES, CategoryDetector

            parts.append(CategoryDetector(DEFAULT_CATEGORIES))  # occupations only when asked for: they over-redact
        elif name == "names":
            from ppt.detect.names import NameDetector

            parts.append(NameDetector())
        elif name == "addresses":
            from ppt.detect.addresses import AddressDetector

            parts.append(AddressDetector())
    if not parts:
        raise PptError("--protect detected needs a detector: --detect patterns,ner or a --deny FILE", ExitCode.USAGE)
    allowed = read_list(allow, "allow-list") if allow else []
    return Combined(parts, frozenset(a.lower() for a in allowed), keep_kinds=keep_kinds)
