"""Span post-processing shared by every detector: an organisation's legal form joins its name."""

from __future__ import annotations

from ppt.detect.base import Span, widen_organisations


def _span(text: str, value: str, kind: str) -> Span:
    start = text.index(value)
    return Span(start, start + len(value), kind)


def test_an_organisation_takes_its_legal_form_and_other_kinds_do_not():
    text = "at Owl Rock Capital Corporation, Grove Inc. and Shree Ganesh Jewellery House (I) Limited; Anna Co"
    spans = [
        _span(text, "Owl Rock Capital", "ORG"),
        _span(text, "Grove", "ORGANIZATION"),
        _span(text, "Shree Ganesh Jewellery House", "ORG"),
        _span(text, "Anna", "PERSON"),
    ]
    got = [text[s.start : s.end] for s in widen_organisations(text, spans)]
    assert got == ["Owl Rock Capital Corporation", "Grove Inc.", "Shree Ganesh Jewellery House (I) Limited", "Anna"]
