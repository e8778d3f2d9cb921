"""The special-category detector (issue 25): sensitive words that are not named entities, from a lexicon
generated from WordNet and shipped with ppt."""

from __future__ import annotations

import json

import pytest

from ppt.detect import build_detector
from ppt.detect.categories import CATEGORIES, CategoryDetector, lexicon

TEXTS = [
    "Maria, a nurse from Lyon, was diagnosed with diabetes and HIV last year; she is a devout Catholic and a Democrat.",
    "He is gay, works as a software engineer, and is behind on his mortgage after filing for bankruptcy.",
    "Asian and Hispanic patients with depression",
    "The weather in Paris was nice and the meeting went well.",
]


def found(text: str, det=None) -> dict[str, str]:
    [spans] = (det or CategoryDetector()).detect([text])
    return {text[s.start : s.end]: s.kind for s in spans}


def test_each_category_is_detected_and_ordinary_words_are_not():
    assert found(TEXTS[0]) == {
        "nurse": "OCCUPATION",
        "diabetes": "HEALTH",
        "HIV": "HEALTH",
        "Catholic": "RELIGION",
        "Democrat": "POLITICAL",
    }
    assert found(TEXTS[1]) == {
        "gay": "SEXUAL_ORIENTATION",
        "software engineer": "OCCUPATION",  # the longest phrase wins
        "mortgage": "FINANCES",
        "bankruptcy": "FINANCES",
    }
    assert found(TEXTS[2]) == {"Asian": "ETHNICITY", "Hispanic": "ETHNICITY", "depression": "HEALTH"}
    assert found(TEXTS[3]) == {}  # nothing sensitive, nothing marked
    assert found("two doctors and three nurses") == {"doctors": "OCCUPATION", "nurses": "OCCUPATION"}  # plurals


def test_a_word_is_listed_only_under_its_most_frequent_sense():
    words = lexicon()
    for common in ("head", "hand", "black", "plant", "state", "bank", "weather", "meeting"):
        assert common not in words, common
    assert {c for c in words.values()} == set(CATEGORIES)


def test_categories_can_be_chosen_and_name_the_signature():
    health = CategoryDetector(["health"])
    assert found(TEXTS[0], health) == {"diabetes": "HEALTH", "HIV": "HEALTH"}
    assert health.signature.startswith("categories-health@wordnet-3.0#") and CategoryDetector().signature.startswith(
        "categories-all"
    )
    with pytest.raises(ValueError, match="unknown categories"):
        CategoryDetector(["astrology"])


def test_built_through_the_detector_list_and_merged_with_the_others(tmp_path):
    deny = tmp_path / "deny.txt"
    deny.write_text("Lyon\n")
    det = build_detector(["categories"], deny=str(deny))
    [spans] = det.detect([TEXTS[0]])
    assert [TEXTS[0][s.start : s.end] for s in spans] == ["nurse", "Lyon", "diabetes", "HIV", "Catholic", "Democrat"]
    assert "categories-all" in det.signature


@pytest.mark.slow  # seconds: the full suite (CI) runs it, the fast lane does not
def test_shipped_lexicon_matches_its_generator():
    """The shipped file is what ``python -m ppt.detect.categories --build`` writes from WordNet (skipped where
    WordNet is not installed)."""
    import runpy
    from pathlib import Path

    from ppt.mechanisms.prosan.wordnet import wordnet_available

    if not wordnet_available():
        pytest.skip("WordNet (NLTK + the wordnet files) is not installed")
    from importlib import resources

    build = runpy.run_path(str(Path(__file__).parents[2] / "scripts" / "build_categories.py"))["build"]
    shipped = json.loads(resources.files("ppt").joinpath("data/categories.json").read_text())
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        build(f"{d}/categories.json")
        with open(f"{d}/categories.json") as f:
            assert json.load(f) == shipped


@pytest.mark.slow  # loads WordNet
def test_aliases_are_only_i_y_spellings_of_their_synset_outside_wordnet():
    """The generator's alias table adds current spellings WordNet lacks (Uyghur) and refuses anything else: another
    word, a spelling that changes more than an "i" to a "y", a word WordNet has."""
    import runpy
    from pathlib import Path

    from ppt.mechanisms.prosan.wordnet import load_wordnet, wordnet_available

    if not wordnet_available():
        pytest.skip("WordNet (NLTK + the wordnet files) is not installed")
    script = runpy.run_path(str(Path(__file__).parents[2] / "scripts" / "build_categories.py"))
    wn, alias = load_wordnet(), script["_alias"]
    assert alias(wn, wn.synset("uighur.n.01"), "Uyghur") == "uyghur"
    assert alias(wn, wn.synset("kirghiz.n.01"), "Kyrgyz") == "kyrgyz"
    for synset, spelling in [
        ("uighur.n.01", "Uzbek"),
        ("uighur.n.01", "Uyghurs"),
        ("lira.n.01", "Lyra"),
    ]:  # Lyra: a WordNet word
        with pytest.raises(ValueError, match="not an i/y spelling"):
            alias(wn, wn.synset(synset), spelling)
