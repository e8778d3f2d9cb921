"""The special-category detector (issue 25): sensitive words that are not named entities, from a lexicon
generated from WordNet and shipped with ppt."""

from __future__ import annotations

import json

import pytest

from ppt.detect import build_detector
from ppt.detect.categories import CATEGORIES, DEFAULT_CATEGORIES, CategoryDetector, lexicon

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
        "behind on his mortgage": "FINANCES",  # a rule's match is longer than the lexicon's "mortgage"
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
    for common in ("prior", "straight", "cardinal", "metropolitan", "add", "aids", "party", "complaint", "wine"):
        assert common not in words, common  # another sense first, or food before a drug (issue 35)


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
    # the detector list builds DEFAULT_CATEGORIES: every category but occupation ("nurse" stays)
    assert [TEXTS[0][s.start : s.end] for s in spans] == ["Lyon", "diabetes", "HIV", "Catholic", "Democrat"]
    assert "categories-health.sexual_orientation.religion.political.ethnicity.finances.immigration.criminal@" in (
        det.signature
    )


@pytest.mark.slow  # seconds: the full suite (CI) runs it, the fast lane does not
def test_shipped_lexicon_matches_its_generator():
    """The shipped file is what ``python scripts/build_categories.py`` writes from WordNet and the drug list
    (skipped where either is not installed)."""
    import runpy
    from pathlib import Path

    from ppt.mechanisms.prosan.wordnet import wordnet_available

    if not wordnet_available():
        pytest.skip("WordNet (NLTK + the wordnet files) is not installed")
    import importlib.util

    if importlib.util.find_spec("drug_named_entity_recognition") is None:
        pytest.skip("drug-named-entity-recognition (the lexicon's medicine names) is not installed")
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


# issue 35: special categories the way people write them (sentences written for these tests)
DEFAULT = CategoryDetector(DEFAULT_CATEGORIES)


def hidden(text: str, det=DEFAULT) -> set[str]:
    return set(found(text, det))


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        # health: treatments, procedures, medicines, adjectives of a condition, clippings WordNet lacks
        ("My dad starts chemotherapy next week.", "chemotherapy", "HEALTH"),
        ("Since my chemo began I can't taste anything.", "chemo", "HEALTH"),
        ("She has dialysis three times a week.", "dialysis", "HEALTH"),
        ("I'm booked for a colonoscopy on Friday.", "colonoscopy", "HEALTH"),
        ("He keeps his insulin in the fridge at work.", "insulin", "HEALTH"),
        ("I was switched to sertraline in March.", "sertraline", "HEALTH"),  # the drug list, not WordNet
        ("My brother is epileptic and can't drive.", "epileptic", "HEALTH"),
        ("I'm diabetic, so lunch has to be early.", "diabetic", "HEALTH"),
        ("Our son is autistic and hates loud rooms.", "autistic", "HEALTH"),
        ("My sister is 6 months pregnant.", "6 months pregnant", "HEALTH"),
        ("They upped my lithium level checks.", "lithium", "HEALTH"),  # another word first: in its frame
        ("I take quetiapine 50mg at night.", "quetiapine 50mg", "HEALTH"),
        ("He had a stroke last spring.", "had a stroke", "HEALTH"),
        ("My OCD gets worse before exams.", "OCD", "HEALTH"),
        ("I've been off work with burnout.", "burnout", "HEALTH"),
        ("She tore her hamstring at training.", "tore her hamstring", "HEALTH"),
        ("I get anxiety before every shift.", "anxiety", "HEALTH"),
        # sexual orientation and gender identity: what a sentence decides
        ("I think I'm bi but I haven't told anyone.", "bi", "SEXUAL_ORIENTATION"),
        ("My cousin came out as trans at Easter.", "trans", "SEXUAL_ORIENTATION"),
        ("We're two women renting a flat together.", "We're two women", "SEXUAL_ORIENTATION"),
        ("He introduced me to his husband at the party.", "his husband", "SEXUAL_ORIENTATION"),
        ("My kid is nonbinary and uses they/them.", "nonbinary", "SEXUAL_ORIENTATION"),
        # religion through places, practices, dress
        ("We go to the mosque every Friday.", "mosque", "RELIGION"),
        ("I'm fasting for Ramadan so I skip lunch meetings.", "fasting for Ramadan", "RELIGION"),
        ("Our synagogue runs a food drive.", "synagogue", "RELIGION"),
        ("She wears a hijab and her boss keeps mentioning it.", "hijab", "RELIGION"),
        ("My parents are evangelical and won't discuss it.", "evangelical", "RELIGION"),
        ("We never miss church on Sundays.", "church", "RELIGION"),
        # political: votes, parties, unions
        ("I voted Green at the last election.", "voted Green", "POLITICAL"),
        ("My uncle is a Reform voter now.", "Reform voter", "POLITICAL"),
        ("I'm the union rep for our warehouse.", "union rep", "POLITICAL"),
        ("She is a member of the Socialist Party.", "member of the Socialist Party", "POLITICAL"),
        # finances
        ("I lost £12,000 on sports betting last year.", "£12,000", "FINANCES"),
        ("We're three months behind on rent.", "three months behind on rent", "FINANCES"),
        ("My mum is on universal credit.", "universal credit", "FINANCES"),
        ("He blew all his savings on crypto.", "all his savings", "FINANCES"),
        ("I had a gambling problem for years.", "gambling", "FINANCES"),
        # immigration
        ("I'm on an H-1B and my employer is laying people off.", "H-1B", "IMMIGRATION"),
        ("My wife's spouse visa runs out in May.", "spouse visa", "IMMIGRATION"),
        ("He is undocumented and afraid to call the police.", "undocumented", "IMMIGRATION"),
        ("My asylum claim was refused last month.", "asylum", "IMMIGRATION"),
        ("I have a residence permit until 2027.", "residence permit", "IMMIGRATION"),
        ("She came to Leeds as a refugee.", "refugee", "IMMIGRATION"),
        # criminal
        ("My son was arrested for shoplifting.", "arrested for shoplifting", "CRIMINAL"),
        ("He has a criminal record from his twenties.", "criminal record", "CRIMINAL"),
        ("I'm on probation until June.", "on probation", "CRIMINAL"),
        ("She got a DUI in 2019.", "DUI", "CRIMINAL"),
        ("My ex has a restraining order against him.", "restraining order", "CRIMINAL"),
        ("I was convicted of fraud in 2015.", "convicted of fraud", "CRIMINAL"),
    ],
)
def test_special_categories_the_way_people_write_them(text, value, kind):
    got = found(text, DEFAULT)
    assert got.get(value) == kind, got


@pytest.mark.parametrize(
    "text",
    [
        "How does chemotherapy target cancer cells?",  # a topic: no person in the text
        "Do visas for the Schengen area cost more this year?",
        "Explain the difference between a mosque and a minaret.",
        "What causes a stroke in tennis to lose power?",
        "Why did the Labour Party win in 1945?",
        "List the crimes a fraud detection model should flag.",
    ],
)
def test_topics_without_a_person_are_not_marked(text):
    """The personal tier and the rules apply only to a text that refers to someone."""
    assert hidden(text) - {"cancer"} == set(), found(text, DEFAULT)


@pytest.mark.parametrize(
    "text",
    [
        "How do I configure my developer servers so the lessons page loads faster?",  # occupation is not default
        "My code has a memory leak and the test runner hangs.",
        "I'm writing a Python loop: for i in range(10), print i.",
        "We had a party for my sister's birthday and I made a quiche.",
        "Our team filed a formal complaint about the prior version of the app.",
        "I paid for the tickets with my card and the line was straight.",
        "Can you help me add AAA batteries to my shopping list?",
        "I'm writing a will and my husband wants to read it first.",
        "My flight was delayed so I missed the union of the two meetings.",
        "I prefer a dry white wine with fish; my sister drinks beer.",
    ],
)
def test_ordinary_sentences_give_nothing(text):
    assert found(text, DEFAULT) == {}


def test_default_categories_leave_occupation_out_and_it_stays_available():
    assert "occupation" not in DEFAULT_CATEGORIES and set(DEFAULT_CATEGORIES) | {"occupation"} == set(CATEGORIES)
    text = "My sister is a nurse."
    assert found(text, DEFAULT) == {} and found(text, CategoryDetector(["occupation"])) == {"nurse": "OCCUPATION"}
    assert DEFAULT.signature.startswith("categories-health.sexual_orientation.religion.")


def test_rules_are_compiled_once_and_the_lookup_is_one_dict_per_run():
    from ppt.detect import categories

    a, b = CategoryDetector(DEFAULT_CATEGORIES), CategoryDetector(DEFAULT_CATEGORIES)
    assert a.rules is b.rules  # one compiled set per category choice
    assert all(isinstance(p, categories.re.Pattern) for p, _, _ in a.rules)
    assert categories.MAX_WORDS == 4


def test_the_tiers_are_disjoint_and_every_category_has_words():
    from ppt.detect.categories import framed_lexicon, personal_lexicon

    always, personal, framed = set(lexicon()), set(personal_lexicon()), set(framed_lexicon())
    assert not always & personal and not always & framed and not personal & framed
    for category in ("immigration", "criminal"):
        assert category in set(lexicon().values()) | set(personal_lexicon().values())
