"""Generate ppt/data/categories.json (the special-category lexicon of ``ppt.detect.categories``) from WordNet 3.0.

Needs NLTK and the WordNet files (Debian ``wordnet-base``; see ../shared/docs/MODELS.md). Run from the
repository root: ``python scripts/build_categories.py``; tests/detect/test_categories.py checks the shipped file
against it where WordNet is installed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ppt.detect.categories import MAX_WORDS, ROOTS, WORD

NOUN_ONLY = ("health", "finances", "occupation")
# categories of who a person is: a word whose first sense is one individual of a listed class counts (_in)
IDENTITY = ("sexual_orientation", "religion", "political", "ethnicity")
# beliefs: their adherents are listed too (_adherents)
BELIEFS = ("religion", "political")
# where a person is mostly described by an adjective ("asexual"): the adjectives WordNet derives are listed too.
# Not for beliefs, whose derived adjectives describe things more often than people ("papal", "democratic")
ADJECTIVES = ("sexual_orientation",)
# a gloss that makes a noun an adherent of a belief: "an adherent of Sikhism", "an advocate of libertarianism"
# spellings in current English use that WordNet 3.0 (2006) lacks, of a people it lists under an older romanisation:
# synset -> spellings added to the synset's category. Kept small and checked (:func:`_alias`): each is one of the
# synset's own lemmas with some "i" written "y" (the transliteration variant WordNet itself shows in Uighur/Uygur),
# and no WordNet word, so an alias can only match the people's name
ALIASES = {"uighur.n.01": ("Uyghur",), "kirghiz.n.01": ("Kyrgyz",)}
# parties: a member of one is listed too (_members: "a member of the Green Party")
PARTIES = ("political",)
ADHERENT = re.compile(r"(?:an? |one )?(?:adherent|advocate|follower|supporter|believer|disciple)s? (?:of|in) ([\w-]+)")


def _uses(wn, word: str, pos: str) -> int:
    """How often ``word`` is tagged with ``pos`` in WordNet's sense-tagged corpus (its lemma counts)."""
    return sum(lm.count() for s in wn.synsets(word, pos=pos) for lm in s.lemmas() if lm.name().lower() == word)


def _mostly_not_a_noun(wn, word: str) -> bool:
    """A word used more often as a verb, adjective or adverb than as a noun ("found", "want", "major")."""
    other = sum(_uses(wn, word, pos) for pos in ("v", "a", "s", "r"))
    return other > _uses(wn, word, "n")


def _in(s, synsets: set) -> bool:
    """``s`` is in the category: listed, or one individual of a listed class (the prophet Mormon, WordNet's first
    sense of "Mormon", is an instance of prophet: the word's other sense, a Latter-Day Saint, then counts)."""
    return s in synsets or any(h in synsets for h in s.instance_hypernyms())


def _phrase(lemma: str) -> str | None:
    """The lexicon's form of a WordNet lemma (lower case, spaces), or None when it cannot be one."""
    phrase = lemma.replace("_", " ").lower()
    if len(phrase.split()) > MAX_WORDS or len(phrase) < 3 or not WORD.fullmatch(phrase.split()[0]):
        return None
    return phrase


def _alias(wn, synset, spelling: str) -> str:
    """The lexicon's form of an :data:`ALIASES` spelling of ``synset``, after checking it is a transliteration
    variant of one of its lemmas (an "i" written "y", nothing else) and not a word of WordNet."""
    word = spelling.lower()
    variant = any(
        len(lemma) == len(word) and all(a == b or (a, b) == ("i", "y") for a, b in zip(lemma.lower(), word))
        for lemma in synset.lemma_names()
    )
    if not variant or wn.synsets(word) or _phrase(word) != word:
        raise ValueError(f"{spelling!r} is not an i/y spelling of {synset.name()} outside WordNet")
    return word


def _members(wn, synsets: set) -> tuple[set[str], set[str]]:
    """Nouns WordNet makes members of one of ``synsets`` (member holonyms: Democrat, of the Democratic Party;
    Green, of the Green Party): (phrases whose first sense this is, capitalised lemmas whose lower-case word means
    something else first: "Green", and not "green", the colour)."""
    plain, cased = set(), set()
    for s in wn.all_synsets("n"):
        if s.instance_hypernyms() or not any(h in synsets for h in s.member_holonyms()):
            continue
        for lemma in s.lemma_names():
            phrase = _phrase(lemma)
            if phrase is None:
                continue
            if wn.synsets(lemma, pos="n")[0] == s:
                plain.add(phrase)
            elif lemma[0].isupper():
                cased.add(lemma.replace("_", " "))
    return plain, cased


def _adherents(wn, beliefs: set[str]) -> set[str]:
    """Nouns WordNet defines as an adherent of one of ``beliefs`` (a Sikh: "an adherent of Sikhism"), and the
    "-ist" noun of each "-ism" (nationalism: nationalist)."""
    out = set()
    for s in wn.all_synsets("n"):
        m = ADHERENT.match(s.definition())
        if m and m.group(1).lower() in beliefs and not s.instance_hypernyms():
            out.update(p for p in map(_phrase, s.lemma_names()) if p)
    for b in beliefs:
        if b.endswith("ism") and wn.synsets(b[:-3] + "ist", pos="n"):
            out.add(b[:-3] + "ist")
    return out


def _adjectives(wn, synsets: set) -> set[str]:
    """Adjectives WordNet derives from the category's nouns (Buddhism: Buddhistic; asexuality: asexual), where
    that is the adjective's most frequent sense ("straight", from heterosexuality, is not)."""
    out = set()
    for s in synsets:
        for lemma in s.lemmas():
            for d in lemma.derivationally_related_forms():
                if d.synset().pos() not in ("a", "s"):
                    continue
                senses = wn.synsets(d.name(), pos="a")
                phrase = _phrase(d.name())
                if phrase and senses and senses[0] == d.synset():
                    out.add(phrase)
    return out


def build(path: str) -> dict[str, int]:
    """Write the lexicon from WordNet (NLTK and the WordNet files needed); the number of phrases per category."""
    from ppt.mechanisms.prosan.wordnet import load_wordnet

    wn = load_wordnet()
    categories: dict[str, list[str]] = {}
    cased: dict[str, list[str]] = {}
    for category, roots in ROOTS.items():
        synsets = set()
        for name in roots:
            try:
                root = wn.synset(name)
            except Exception:  # noqa: BLE001 - a root missing from this WordNet: skip it
                continue
            synsets.add(root)
            synsets.update(root.closure(lambda s: s.hyponyms()))
        phrases = set()
        for s in synsets:
            for lemma in s.lemma_names():
                phrase = _phrase(lemma)
                if phrase is None:
                    continue
                first = wn.synsets(lemma, pos="n")
                if not (
                    first and (first[0] in synsets or (category in IDENTITY and _in(first[0], synsets)))
                ):  # the word's most frequent sense is in the category
                    continue
                # "found", "want", "major": mostly verbs or adjectives in another sense. Not applied where the
                # adjective carries the same meaning ("gay", "Catholic", "Asian", "socialist")
                if category in NOUN_ONLY and " " not in phrase and _mostly_not_a_noun(wn, lemma):
                    continue
                phrases.add(phrase)
        if category in BELIEFS:
            phrases |= _adherents(wn, {p for s in synsets for p in map(_phrase, s.lemma_names()) if p})
        if category in PARTIES:
            plain, capitalised = _members(wn, synsets)
            phrases |= plain
            cased[category] = sorted(capitalised - {p for p in capitalised if p.lower() in phrases})
        if category in ADJECTIVES:
            phrases |= _adjectives(wn, synsets)
        for name, spellings in ALIASES.items():
            if wn.synset(name) in synsets:
                phrases |= {_alias(wn, wn.synset(name), s) for s in spellings}
        categories[category] = sorted(phrases)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(
            {"source": "WordNet 3.0", "roots": ROOTS, "aliases": ALIASES, "categories": categories, "cased": cased},
            f,
            indent=0,
            sort_keys=True,
        )
        f.write("\n")
    return {c: len(p) for c, p in categories.items()}


if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "ppt" / "data" / "categories.json"
    print(json.dumps(build(str(target))))
    sys.exit(0)
