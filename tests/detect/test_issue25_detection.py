"""Issue 25's detection on free-form prompts: the WordNet lexicon's finance words, the adherents of religions
and ideologies, asexual; ages in their common forms and lenient phone numbers through presidio; and what must
stay unmarked (common words of the templated prompts, numbers that are not ages)."""

from __future__ import annotations

import re

import pytest

from ppt.detect.categories import CategoryDetector


def kinds(text: str, det) -> dict[str, str]:
    [spans] = det.detect([text])
    return {text[s.start : s.end]: s.kind for s in spans}


@pytest.mark.parametrize(
    ("word", "kind"),
    [
        ("overdraft", "FINANCES"),
        ("foreclosure", "FINANCES"),
        ("eviction", "FINANCES"),
        ("insolvency", "FINANCES"),
        ("repossession", "FINANCES"),  # not in the prompt generator's lists: the roots, not the test set
        ("Marxist", "POLITICAL"),  # "an advocate of Marxism"
        ("libertarian", "POLITICAL"),
        ("nationalist", "POLITICAL"),  # nationalism -> nationalist
        ("centrist", "POLITICAL"),
        ("Green", "POLITICAL"),  # "a member of the Green Party": capitalised only (green is a colour first)
        ("Greens", "POLITICAL"),
        ("Black Panther", "POLITICAL"),  # a member of the Black Panthers
        ("Sikh", "RELIGION"),  # "an adherent of Sikhism"
        ("Lutheran", "RELIGION"),
        ("Mormon", "RELIGION"),  # first sense: the prophet (an instance of a religious person)
        ("atheist", "RELIGION"),
        ("Taoist", "RELIGION"),
        ("asexual", "SEXUAL_ORIENTATION"),  # WordNet's adjective of asexuality
        ("Somali", "ETHNICITY"),
        ("Berber", "ETHNICITY"),
        ("Uyghur", "ETHNICITY"),  # WordNet 3.0 spells it Uighur, Uigur, Uygur: an alias of the generator script
        ("Kyrgyz", "ETHNICITY"),  # WordNet: Kirghiz, Kirgiz, Khirghiz
    ],
)
def test_the_special_categories_words_the_old_lexicon_missed(word, kind):
    assert kinds(f"My neighbour is facing {word} trouble.", CategoryDetector()) == {word: kind}


def test_common_words_of_the_templated_prompts_are_not_marked():
    """Precision: no word that occurs 3+ times in 80 templated prompts outside their private items is in the
    lexicon, but for five occupation words listed before issue 25's additions ("doctor", "job": the templates'
    own occupation sentences; "official", "technology")."""
    from ppt.experiments.pii import make_pii
    from ppt.mechanisms.policy import stopwords_en

    recs = make_pii(80, seed=7)
    stop = set(stopwords_en())
    counts: dict[str, int] = {}
    for r in recs:
        private = {w.lower() for it in r["private_items"] for w in re.findall(r"[A-Za-z]+", it)}
        for w in re.findall(r"[A-Za-z]+", r["text"]):
            if w.lower() not in private and w.lower() not in stop:
                counts[w.lower()] = counts.get(w.lower(), 0) + 1
    common = sorted(w for w, n in counts.items() if n >= 3)
    assert len(common) > 100
    det = CategoryDetector()
    marked = {w for w in common if kinds(w, det)}
    assert marked <= {"doctor", "job", "jobs", "official", "technology"}, marked
    for word in ("green", "labour", "federal", "democratic", "progressive", "default"):
        assert kinds(f"the {word} one", det) == {}, word


@pytest.fixture(scope="module")
def patterns():
    pytest.importorskip("presidio_analyzer")
    from ppt.detect.patterns import PatternDetector

    return PatternDetector()


@pytest.mark.parametrize(
    "text",
    [
        "She is a 34-year-old nurse.",
        "He is 34 years old.",
        "A reader, aged 34, writes.",
        "Age: 34",
        "I'm 34 and tired.",
        "I am 34.",
        "My sister turned 34 this spring.",
        "At 34, I still read the news daily.",
        "Robert is 34.",
        "- Robert is 34\n- Robert lives in Leeds",
    ],
)
def test_ages_in_their_common_forms(patterns, text):
    assert kinds(text, patterns) == {"34": "AGE"}


@pytest.mark.parametrize(
    "text",
    [
        "By 35,000,000 votes to 12,000,000; the score was 3-1.",
        "I am 20 minutes late and profits rose 34% this year.",
        "He turned 34 per cent of the votes; the index is 3.5 and I'm 25% sure.",
    ],
)
def test_numbers_that_are_not_ages_or_phones_are_not_marked(patterns, text):
    assert kinds(text, patterns) == {}


def test_phone_numbers_that_are_possible_if_not_valid(patterns):
    """presidio's phone recognizer at leniency 0: made-up numbers in a prompt are still someone's number."""
    text = "Call me on +44 970 6355 or 598.555.3105 or (579) 555-4321."
    assert kinds(text, patterns) == {n: "PHONE_NUMBER" for n in ("+44 970 6355", "598.555.3105", "(579) 555-4321")}


def test_the_signatures_name_the_lexicon_and_the_recognizer_settings(patterns):
    from ppt.detect.categories import lexicon_tag

    assert CategoryDetector().signature.endswith("#" + lexicon_tag()) and len(lexicon_tag()) == 8
    assert re.fullmatch(r"patterns:presidio@[\d.]+#[0-9a-f]{8}", patterns.signature)
