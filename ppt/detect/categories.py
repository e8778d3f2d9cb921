"""Sensitive words that are not named entities: health, sexual orientation, religion, political opinion,
ethnicity, finances, occupation (GDPR art. 9's special categories, plus two that identify), from WordNet.

Why a shipped lexicon: the words come from a maintained resource (WordNet 3.0's hyponyms of a few root
synsets per category), but WordNet is an optional install; the lexicon is generated once from it
(``python scripts/build_categories.py``, which needs NLTK and WordNet) into ``ppt/data/categories.json``,
so detection needs neither at run time. A word is listed only when its most frequent noun sense falls under
the category (``cancer`` yes, ``head`` no; a capitalised form WordNet lists with another first sense, "Green" of
the Green Party, only with its capital) and, for health, finances and occupations, it is used as a noun at least
as often as otherwise (``found``, ``want``, ``major`` no), which keeps ordinary words out.
Detection looks up each run of up to four words in one dict: no regular expression over thousands of phrases.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources

from ppt.detect.base import Span

# category -> WordNet root synsets (their hyponym closure is the category)
ROOTS: dict[str, tuple[str, ...]] = {
    "health": (
        "ill_health.n.01",
        "disease.n.01",
        "disorder.n.01",
        "mental_illness.n.01",
        "symptom.n.01",
        "mental_disorder.n.01",
        "depression.n.01",
        "pregnancy.n.01",
        "medical_procedure.n.01",
        "medicine.n.02",
        "drug_of_abuse.n.01",
        "disability.n.01",
    ),
    "sexual_orientation": (
        "homosexual.n.01",
        "heterosexual.n.01",
        "bisexual.n.01",
        "sexual_preference.n.01",
        "asexuality.n.01",
    ),
    "religion": (
        "religion.n.01",
        "religious_person.n.01",
        "religious_belief.n.01",
        "religious_orientation.n.01",
        "clergyman.n.01",
    ),
    "political": (
        "political_orientation.n.01",
        "political_party.n.01",
        "nationalism.n.02",
        "nationalism.n.04",
        "politician.n.02",
        "radical.n.03",
        "conservative.n.01",
        "liberal.n.01",
    ),
    "ethnicity": (
        "ethnic_group.n.01",
        "race.n.03",
        "person_of_color.n.01",
        "african.n.01",
        "jew.n.01",
        "spanish_american.n.01",
    ),
    "finances": (
        "debt.n.01",
        "debt.n.02",
        "indebtedness.n.01",
        "bankruptcy.n.01",
        "insolvency.n.01",
        "nonpayment.n.02",
        "foreclosure.n.01",
        "repossession.n.01",
        "eviction.n.01",
        "eviction.n.02",
        "overdraft.n.01",
        "mortgage.n.01",
        "wage.n.01",
        "poverty.n.01",
        "unemployment.n.01",
        "unemployed_people.n.01",
    ),
    "occupation": (
        "occupation.n.01",
        "professional.n.01",
        "worker.n.01",
        "health_professional.n.01",
        "educator.n.01",
        "engineer.n.01",
        "businessperson.n.01",
        "creator.n.02",
        "writer.n.01",
        "linguist.n.02",
        "financier.n.01",
        "preserver.n.03",
    ),
}
CATEGORIES = tuple(ROOTS)
MAX_WORDS = 4
WORD = re.compile(r"[A-Za-z]+(?:[-'][A-Za-z]+)*")


@lru_cache(maxsize=1)
def _shipped() -> str:
    return resources.files("ppt").joinpath("data/categories.json").read_text(encoding="utf-8")


def lexicon_tag() -> str:
    """8 hex digits naming the shipped lexicon's content (a regenerated lexicon is another detector)."""
    return hashlib.sha256(_shipped().encode()).hexdigest()[:8]


@lru_cache(maxsize=1)
def cased_lexicon() -> dict[str, str]:
    """phrase (as WordNet capitalises it) -> its category: words matched only with that capital, because the
    lower-case word means something else first ("Green", a member of the Green Party; green, the colour)."""
    data = json.loads(_shipped())
    return {p: c for c in CATEGORIES for p in data.get("cased", {}).get(c, [])}


@lru_cache(maxsize=1)
def lexicon() -> dict[str, str]:
    """phrase (lower case, words separated by one space) -> its category, from the shipped lexicon."""
    data = json.loads(_shipped())
    out: dict[str, str] = {}
    for category in CATEGORIES:  # the order of CATEGORIES decides a phrase listed twice
        for phrase in data["categories"].get(category, []):
            out.setdefault(phrase, category)
    return out


class CategoryDetector:
    """Spans of the lexicon's phrases in the chosen categories, longest phrase first at each word."""

    def __init__(self, categories: Sequence[str] = CATEGORIES) -> None:
        unknown = sorted(set(categories) - set(CATEGORIES))
        if unknown:
            raise ValueError(f"unknown categories: {', '.join(unknown)} (known: {', '.join(CATEGORIES)})")
        chosen = set(categories)
        self.phrases = {p: c for p, c in lexicon().items() if c in chosen}
        self.cased = {p: c for p, c in cased_lexicon().items() if c in chosen}
        tag = "all" if chosen == set(CATEGORIES) else ".".join(c for c in CATEGORIES if c in chosen)
        self.signature = f"categories-{tag}@wordnet-3.0#{lexicon_tag()}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[Span]:
        words = [(m.start(), m.end(), m.group()) for m in WORD.finditer(text)]
        spans, i = [], 0
        while i < len(words):
            for n in range(min(MAX_WORDS, len(words) - i), 0, -1):
                category = self._category(" ".join(w for _, _, w in words[i : i + n]), n)
                if category is not None:
                    spans.append(Span(words[i][0], words[i + n - 1][1], category.upper()))
                    i += n
                    break
            else:
                i += 1
        return spans

    def _category(self, written: str, n: int) -> str | None:
        """The category of a run of ``n`` words: the lexicon's lower-case phrase, else its capitalised one."""
        phrase = written.lower()
        category = self.phrases.get(phrase, self.cased.get(written))
        if category is None and n == 1 and phrase.endswith("s"):  # a plural (doctors, diabetics, Greens)
            category = self.phrases.get(phrase[:-1], self.cased.get(written[:-1]))
        return category


__all__ = ["CATEGORIES", "MAX_WORDS", "ROOTS", "WORD", "CategoryDetector", "cased_lexicon", "lexicon", "lexicon_tag"]
