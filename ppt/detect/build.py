"""The detector of a run: the user's deny-list plus library detectors, propagated to every other occurrence of a
detected value in the record (:func:`ppt.detect.base.propagate`), minus the allow-list, merged."""

from __future__ import annotations

from collections.abc import Sequence

from ppt.detect.base import PROPAGATION, Detector, Span, list_tag, merge_spans, propagate, read_list

DETECTORS = ("patterns", "ner", "categories")


class Combined:
    """Several detectors' spans, each detected value marked at its other occurrences in the record too
    (:func:`~ppt.detect.base.propagate`; the signature says so), merged; spans whose text is on the allow-list
    are dropped (before and after the propagation)."""

    def __init__(self, parts: Sequence[Detector], allow: frozenset[str] = frozenset(), allow_tag: str = "") -> None:
        self.parts = list(parts)
        self.allow = allow
        names = "+".join(p.signature for p in self.parts)
        self.signature = names + (f"-allow#{allow_tag}" if allow else "") + f"-propagate:{PROPAGATION}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        found: list[list[Span]] = [[] for _ in texts]
        for part in self.parts:
            for i, spans in enumerate(part.detect(texts)):
                found[i].extend(spans)
        out = []
        for text, spans in zip(texts, found):
            spans = propagate(text, self._allowed(text, spans))
            out.append(merge_spans(self._allowed(text, spans)))
        return out

    def _allowed(self, text: str, spans: list[Span]) -> list[Span]:
        return [s for s in spans if text[s.start : s.end].strip().lower() not in self.allow] if self.allow else spans


def build_detector(names: Sequence[str], *, deny: str | None = None, allow: str | None = None) -> Combined:
    """The detectors ``names`` (of :data:`DETECTORS`) plus the user's deny-list, minus the allow-list."""
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
    for name in dict.fromkeys(names):
        if name == "patterns":
            from ppt.detect.patterns import PatternDetector

            parts.append(PatternDetector())
        elif name == "ner":
            from ppt.detect.ner import NerDetector

            parts.append(NerDetector())
        elif name == "categories":
            from ppt.detect.categories import CategoryDetector

            parts.append(CategoryDetector())
    if not parts:
        raise PptError("--protect detected needs a detector: --detect patterns,ner or a --deny FILE", ExitCode.USAGE)
    allowed = read_list(allow, "allow-list") if allow else []
    return Combined(parts, frozenset(a.lower() for a in allowed), list_tag(allowed) if allowed else "")
