"""The name detector (gazetteer, honorifics, cues, widening) and span snapping to whole words."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ppt.detect.base import Span, snap_to_words
from ppt.detect.names import NameDetector, gazetteer


@pytest.fixture(scope="module")
def det():
    return NameDetector()


def marked(det, text: str) -> set[str]:
    return {text[s.start : s.end] for s in det.detect([text])[0]}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("The patient, Tereza Čerkez, was admitted on Monday.", "Tereza Čerkez"),  # Czech, diacritics
        ("We met Väinö Otila at the café.", "Väinö Otila"),  # Finnish given name, unknown surname
        ("Maho Tanaka lives near the station.", "Maho Tanaka"),  # two words no dictionary has
        ("Please ask Priya about the invoice.", "Priya"),  # a single given name
        ("Can Kwame join the call?", "Kwame"),
        ("Dr. Okafor will call you back.", "Dr. Okafor"),  # honorific kept with the name
        ("I spoke to Mrs Nguyen-Tran yesterday.", "Mrs Nguyen-Tran"),
        ("Dr. J. R. Okafor-Smith signed it.", "Dr. J. R. Okafor-Smith"),
        ("Hi Grace, the files are attached.", "Grace"),  # an English word, named by a greeting
        ("My husband Will and I disagree.", "Will"),  # an English word, named by a relation
        ("My name is chidubem and I need help.", "chidubem"),  # lower case, after 'my name is'
        ("i met kwame at the gym", "kwame"),  # a lower-case given name that is no English word
        ("Best regards,\nOluwaseun Adeyemi\nSales", "Oluwaseun Adeyemi"),  # a sign-off line
        ("Abena: are you coming tonight?", "Abena"),  # a chat speaker
        ("Our manager, Grace Park, approved it.", "Grace Park"),
    ],
)
def test_names_are_found_whole(det, text, name):
    assert name in marked(det, text)


@pytest.mark.parametrize(
    "text",
    [
        "The Green Party won the vote in New York City.",
        "Grace period ends soon, so pay the bill.",
        "Can you explain the will of the people?",
        "Please summarise this article about Microsoft Word.",
        "Mark the date: July 4.",
        "My daughter is sick and my boss is angry.",
        "I'm tired of the rain in March.",
        "We use Python and Docker at work.",
        "How do I sort a list in Python?",
        "The hospital on Main Street is closed.",
        "Will the meeting start at noon?",
        "Hope this helps, thanks!",
    ],
)
def test_ordinary_sentences_give_no_name(det, text):
    assert marked(det, text) == set()


def test_widen_grows_a_partial_name_and_takes_the_honorific(det):
    text = "Maho Tanaka said Dr. Kim Lee arrived. Then Will Smith came."
    spans = [Span(5, 11, "PERSON"), Span(21, 24, "PERSON"), Span(48, 53, "PERSON"), Span(0, 4, "GPE")]
    got = [text[s.start : s.end] for s in det.widen(text, spans)]
    assert got == ["Maho Tanaka", "Dr. Kim Lee", "Will Smith", "Maho"]  # other kinds are left alone


def test_snap_to_words_never_cuts_a_word():
    text = "On the 40th day Tomás left"
    spans = snap_to_words(text, [Span(7, 9, "DATE"), Span(16, 19, "PERSON"), Span(15, 21, "PERSON")])
    assert [text[s.start : s.end] for s in spans] == ["40th", "Tomás", "Tomás"]
    assert snap_to_words("a  b", [Span(1, 3, "X")]) == []  # white space only: nothing to replace


def test_the_gazetteer_spans_cultures_and_flags_english_words():
    first, last, english, tag = gazetteer()
    for name in ("Väinö", "Tereza", "Priya", "Kwame", "Aarav", "Mohammed", "Tomás"):
        assert name in first, name
    assert "Nguyen" in last and "will" in english and "maria" not in first
    assert len(tag) == 8


def test_the_names_module_imports_no_model_library():
    code = "import sys, ppt.detect.names as n; n.NameDetector(); print(sorted({'torch','spacy','presidio_analyzer','faker'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_name_found_once_is_replaced_in_any_case_but_an_english_word_only_capitalised():
    from ppt.detect.build import build_detector

    text = "Tereza Novakova called. TEREZA said novakova owes money. Will Smith said he will come."
    got = [text[s.start : s.end] for s in build_detector(["names"]).detect([text])[0]]
    assert got == ["Tereza Novakova", "TEREZA", "novakova", "Will Smith"]


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("I am in JÄRVENPÄÄ for a business trip.", "JÄRVENPÄÄ"),  # upper case, no dictionary word
        ("We drove back to Mabopane on Sunday.", "Mabopane"),
        ("She moved from Rzeszów last year.", "Rzeszów"),
        ("The parcel goes to NORWAY first.", "NORWAY"),  # a country name, in capitals
        ("Carry me back to Australia.", "Australia"),
    ],
)
def test_places_after_a_preposition_and_country_names(det, text, place):
    assert (place, "GPE") in {(text[s.start : s.end], s.kind) for s in det.detect([text])[0]}


def test_english_words_after_a_preposition_are_no_place(det):
    assert marked(det, "I code in Python at Google and listen to Music in June.") == set()
