"""Generate ppt/data/categories.json (the special-category lexicon of ``ppt.detect.categories``) from WordNet 3.0.

Needs NLTK and the WordNet files (Debian ``wordnet-base``; see ../shared/docs/MODELS.md). Run from the
repository root: ``python scripts/build_categories.py``; tests/detect/test_categories.py checks the shipped file
against it where WordNet is installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ppt.detect.categories import MAX_WORDS, ROOTS, WORD

NOUN_ONLY = ("health", "finances", "occupation")


def _uses(wn, word: str, pos: str) -> int:
    """How often ``word`` is tagged with ``pos`` in WordNet's sense-tagged corpus (its lemma counts)."""
    return sum(lm.count() for s in wn.synsets(word, pos=pos) for lm in s.lemmas() if lm.name().lower() == word)


def _mostly_not_a_noun(wn, word: str) -> bool:
    """A word used more often as a verb, adjective or adverb than as a noun ("found", "want", "major")."""
    other = sum(_uses(wn, word, pos) for pos in ("v", "a", "s", "r"))
    return other > _uses(wn, word, "n")


def build(path: str) -> dict[str, int]:
    """Write the lexicon from WordNet (NLTK and the WordNet files needed); the number of phrases per category."""
    from ppt.mechanisms.prosan.wordnet import load_wordnet

    wn = load_wordnet()
    categories: dict[str, list[str]] = {}
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
                phrase = lemma.replace("_", " ").lower()
                if len(phrase.split()) > MAX_WORDS or len(phrase) < 3 or not WORD.fullmatch(phrase.split()[0]):
                    continue
                first = wn.synsets(lemma, pos="n")
                if not (first and first[0] in synsets):  # the word's most frequent sense is in the category
                    continue
                # "found", "want", "major": mostly verbs or adjectives in another sense. Not applied where the
                # adjective carries the same meaning ("gay", "Catholic", "Asian", "socialist")
                if category in NOUN_ONLY and " " not in phrase and _mostly_not_a_noun(wn, lemma):
                    continue
                phrases.add(phrase)
        categories[category] = sorted(phrases)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"source": "WordNet 3.0", "roots": ROOTS, "categories": categories}, f, indent=0, sort_keys=True)
        f.write("\n")
    return {c: len(p) for c, p in categories.items()}


if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "ppt" / "data" / "categories.json"
    print(json.dumps(build(str(target))))
    sys.exit(0)
