"""Issue 25: a value detected once in a record is marked at its other occurrences (a first name alone after the
full name, a "From:" line spaCy does not tag), case-sensitively, so a name that is also a common word marks the
name and not the word."""

from __future__ import annotations

import pytest

from ppt.detect import Span
from ppt.detect.build import Combined


class Given:
    """A detector that marks the given phrases' first occurrence only, as a model that tags one mention would."""

    signature = "given"

    def __init__(self, **kinds: str) -> None:
        self.kinds = kinds

    def detect(self, texts):
        out = []
        for t in texts:
            found = [(t.find(p), p, k) for p, k in self.kinds.items() if p in t]
            out.append([Span(i, i + len(p), k) for i, p, k in found])
        return out


def marked(text: str, det) -> list[str]:
    [spans] = det.detect([text])
    return [text[s.start : s.end] for s in spans]


def test_a_first_name_alone_after_the_full_name_is_marked():
    text = "From: Lucas Costa\nSubject: the article\nThis is about Lucas Costa. Lucas has diabetes. Costa's dog."
    got = marked(text, Combined([Given(**{"Lucas Costa": "PERSON"})]))
    assert got == ["Lucas Costa", "Lucas Costa", "Lucas", "Costa"]


def test_a_name_that_is_a_lowercase_word_marks_the_name_not_the_word():
    text = "Will Turner wrote in. Will says he will stay, and his will was read. Turner will go."
    got = marked(text, Combined([Given(**{"Will Turner": "PERSON"})]))
    assert got == ["Will Turner", "Will", "Turner"]
    assert "will" not in got


def test_any_kind_is_propagated_as_its_whole_text_and_only_names_word_by_word():
    text = "I live in Cardiff. Cardiff is wet. New York is far; the New Forest is not. My age: 34; 34.5% agree."
    det = Combined([Given(Cardiff="GPE", **{"New York": "GPE"}, **{"34": "AGE"})])
    [spans] = det.detect([text])
    got = [(text[s.start : s.end], s.kind) for s in spans]
    # "New" of the place is not a name's word; "34" in "34.5" is part of another number
    assert got == [("Cardiff", "GPE"), ("Cardiff", "GPE"), ("New York", "GPE"), ("34", "AGE")]


def test_titles_initials_and_the_allow_list_are_not_propagated(tmp_path):
    text = "Dr J. Lucas Costa wrote. Dr Smith and Lucas agree, says Costa."
    det = Combined([Given(**{"Dr J. Lucas Costa": "PERSON"})], allow=frozenset({"costa"}))
    assert marked(text, det) == ["Dr J. Lucas Costa", "Lucas"]


def test_the_signature_names_the_propagation():
    assert (
        Combined([Given()]).signature == "given-propagate:same-text.person-words.anycase-names-drop:impersonal-times.2"
    )


def test_spacy_names_alone_are_hidden():
    pytest.importorskip("spacy")
    from ppt.detect.ner import NerDetector

    try:
        ner = NerDetector()
    except Exception as e:  # noqa: BLE001 - the offline model is an optional install
        pytest.skip(f"en_core_web_sm: {e}")
    # spaCy's small model tags the name on the From line and in the text, but not the surname alone
    text = "From: Maria Lopez\nSubject: the article\nMy neighbour Maria Lopez has asthma. Lopez's family is Roma."
    [spans] = Combined([ner]).detect([text])
    rest = "".join(ch for i, ch in enumerate(text) if not any(s.start <= i < s.end for s in spans))
    assert "Maria" not in rest and "Lopez" not in rest
