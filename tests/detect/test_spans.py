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


def test_kept_kinds_are_released_verbatim_and_named_in_the_signature():
    from ppt.detect.build import build_detector

    text = "Maria Lopez moved to Lyon with Kwame Mensah."
    kept = build_detector(["names"], keep_kinds=["person"])
    assert [text[s.start : s.end] for s in kept.detect([text])[0]] == ["Lyon"] and "-keep:PERSON-" in kept.signature
    assert len(build_detector(["names"]).detect([text])[0]) == 3


def test_the_cli_keeps_the_kinds_it_is_told_to(tmp_path):
    import json

    from tests.helpers import ppt

    deny = tmp_path / "deny.txt"
    deny.write_text("Lyon\n")
    rec = json.dumps({"id": 1, "text": "I moved to Lyon."}) + "\n"
    base = ("sanitize", "--preset", "readable", "--deny", str(deny), "-q")
    assert json.loads(ppt(*base, stdin=rec).stdout)["text"] == "I moved to <DENY_1>."
    r = ppt(*base, "--keep-kinds", "DENY", stdin=rec)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["text"] == "I moved to Lyon."
    assert ppt("sanitize", "--keep-kinds", "ORG", "-q", stdin=rec).returncode == 2  # needs --protect detected (usage)
