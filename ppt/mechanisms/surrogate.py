"""Surrogates of the same kind: each detected span becomes a value of its kind (a name by a name, a town by a
town, a health condition by a health condition, a phone number by a phone number of the same format), the same
value the same surrogate within the record; with ``--mapping`` and ``ppt restore`` the real values come back.

Why beside the placeholders: an answer about "Elena Rossi from Agra who has asthma" reads like the user's own
prompt, where ``<PERSON_1>`` makes some models refuse or echo the brackets. What it guarantees: each surrogate
is drawn by the exponential mechanism with a constant utility over its kind's public list (uniform; a number's
digits uniform), so, given the detection, the release does not depend on the replaced values: 0 per span,
conditional on what the stamp names (the spans, their kinds, which are equal, the format of numbers and
codes, each name's word count, which one-word name is a word of a longer name, and the undetected text the draws
avoid). A person's name is replaced as one unit, so two people share no surrogate word; a date or quantity keeps
no word but a fixed list of format words (else a placeholder). A draw may by chance give the
original value back (1 in the list's size: it reveals nothing, since it did not depend on it). What the
detector misses is released raw, and detection depends on the text: the stamp states both. Kinds without a
list (organisations, nationalities, URLs, the user's deny-list) get a typed placeholder, as ``placeholder``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from ppt.mechanisms.accounting import Accounting
from ppt.mechanisms.base import Sanitized
from ppt.mechanisms.params import Param
from ppt.mechanisms.placeholder import Placeholder
from ppt.mechanisms.surrogate_lists import (
    CODE_KINDS,
    EMAIL_DOMAINS,
    EMAIL_KINDS,
    FORMAT_KINDS,
    NAME_KINDS,
    PLACE_KINDS,
    Candidates,
    lists,
    reshape,
)

_WORDS = re.compile(r"\S+")
_TOKENS = re.compile(r"\w+")
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*)$")
CONDITION = (
    "the detected spans, their kinds, which of them are equal, each name's number of words, which one-word name "
    "is a word of a longer name of the record (the first such), the undetected text (the draws avoid its words) "
    "and the format of numbers, dates and codes (every character but the digits, a code's letters, month and day "
    "names and ordinal suffixes; a date or quantity with any word but a fixed list of format words gets a "
    "placeholder); detection depends on the text"
)
CONDITION_NO_FORMATS = CONDITION.split(" and the format")[0] + "; detection depends on the text"
MAX_TRIES = 64  # redraws of a candidate already in the released text or given to another span of the record


class Surrogate(Placeholder):
    """Each detected span -> a uniform draw from its kind's public list (numbers: their format, digits drawn)."""

    name: ClassVar[str] = "surrogate"
    notion: ClassVar[str] = (
        "same-kind surrogates for detected spans, uniform over public lists (0 per span given the detection; "
        "undetected text raw)"
    )
    summary: ClassVar[str] = (
        "Same-kind surrogates for detected spans (a name by a name, a number in its format), restorable; "
        "needs --protect detected"
    )
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "formats",
            True,
            "numbers, phones, dates and codes keep their format with uniform digits; false: typed placeholders",
            "bool",
        ),
    )

    no_eps_because: ClassVar[str] = "its draws are uniform: 0 per span given the detection"

    def configure(self, p: dict[str, Any]) -> None:
        self.formats = p["formats"]
        self.numbered = True

    def params(self) -> dict[str, Any]:
        return {"formats": self.formats}

    def signature_params(self) -> dict[str, Any]:
        return {} if self.formats else {"formats": False}

    def perturb(self, texts: list[str], spans: list[list], generators: list | None = None) -> list[Sanitized]:
        """Each text with its spans replaced by surrogates drawn with its record's generator."""
        gens = generators or [np.random.default_rng() for _ in texts]
        return [_Record(text, found, rng, self.formats).run() for text, found, rng in zip(texts, spans, gens)]

    def privacy_events(self, acc: Accounting, *, diagnostics: bool = False) -> list:
        """0 per replaced span given what CONDITION names (a conditional figure: the detection reads the text)."""
        from ppt.accounting import ConditionalDpEvent, SelfComposedEvent

        n = int(acc.n_perturbed)
        condition = CONDITION if self.formats else CONDITION_NO_FORMATS
        return [SelfComposedEvent(ConditionalDpEvent(0.0, condition), n)] if n else []


class _Record:
    """One record's replacement: the draws read the spans' kinds, their equality pattern, the formats and the
    undetected text, never the replaced values."""

    def __init__(self, text: str, spans: list, rng: np.random.Generator, formats: bool) -> None:
        self.text, self.spans, self.rng, self.formats = text, spans, rng, formats
        outside, at = [], 0
        for sp in spans:
            outside.append(text[at : sp.start])
            at = sp.end
        outside.append(text[at:])
        self.released = {w.lower() for part in outside for w in _TOKENS.findall(part)}
        self.used: set[str] = set()  # lower-case words of the surrogates given so far
        self.by_value: dict[tuple[str, str], str] = {}
        self.people: dict[str, list[str] | None] = {}  # a full name (lower case) -> its surrogate's words
        self.word_of: dict[str, tuple[str, int]] = {}  # a name word -> (the first full name holding it, position)
        for sp in spans:
            words = text[sp.start : sp.end].lower().split()
            if sp.kind in NAME_KINDS and len(words) > 1:
                for i, word in enumerate(words):
                    self.word_of.setdefault(word, (" ".join(words), i))
        self.numbers: dict[str, int] = {}

    def draw(self, cands: Candidates) -> str | None:
        """A uniform candidate whose words are neither in the released text nor given to another span."""
        if not len(cands):
            return None
        for j in self.rng.integers(0, len(cands), size=MAX_TRIES).tolist():
            words = cands.words[j]
            if not words & self.released and not words & self.used:
                self.used |= words
                return cands.text[j]
        return None

    def placeholder(self, kind: str) -> str:
        self.numbers[kind] = self.numbers.get(kind, 0) + 1
        return f"<{kind}_{self.numbers[kind]}>"

    def person(self, full: str) -> list[str] | None:
        """The surrogate of one person's full name (lower case, single-spaced): each word drawn afresh, given
        names then a surname, so two people share no surrogate word whatever words their real names share."""
        if full not in self.people:
            words = full.split()
            got = [self.draw(lists()["last" if i == len(words) - 1 else "first"]) for i in range(len(words))]
            self.people[full] = None if None in got else got
        return self.people[full]

    def name(self, original: str) -> str | None:
        """A name as one unit: the same full name the same surrogate (``Maria Lopez`` -> ``Elena Rossi``); a
        one-word name that is a word of a longer name of the record gets the corresponding word of the first such
        name's surrogate (``Lopez`` -> ``Rossi``); any other one-word name a given name."""
        words = original.lower().split()
        if len(words) > 1:
            got = self.person(" ".join(words))
            return " ".join(got) if got else None
        if words[0] in self.word_of:
            full, i = self.word_of[words[0]]
            got = self.person(full)
            return got[i] if got else None
        return self.draw(lists()["first"])

    def new_value(self, sp, original: str) -> str:
        kind = sp.kind
        got: str | None = None
        if kind in NAME_KINDS:
            got = self.name(original)
        elif kind in PLACE_KINDS:
            got = self.draw(lists()["city"])
        elif kind in EMAIL_KINDS:
            first, last = self.draw(lists()["first"]), self.draw(lists()["last"])
            if first and last:
                n, d = self.rng.integers(0, 100), self.rng.integers(0, len(EMAIL_DOMAINS))
                got = f"{first.lower()}.{last.lower()}{n:02d}@{EMAIL_DOMAINS[d]}"
        elif kind in lists():  # a special category: a phrase of the same category
            got = self.draw(lists()[kind])
            if got and _SENTENCE_START.search(self.text[: sp.start]):
                got = got[0].upper() + got[1:]
        elif self.formats and (kind in FORMAT_KINDS or kind in CODE_KINDS):
            got = reshape(original, kind, self.rng)
            if got is not None:
                self.used |= set(got.lower().split())
        return got if got is not None else self.placeholder(kind)

    def run(self) -> Sanitized:
        parts, mapping, at, inside = [], [], 0, 0
        for sp in self.spans:
            original = self.text[sp.start : sp.end]
            key = (sp.kind, " ".join(original.lower().split()))
            if key not in self.by_value:
                self.by_value[key] = self.new_value(sp, original)
            surrogate = self.by_value[key]
            parts += [self.text[at : sp.start], surrogate]
            mapping.append({"surrogate": surrogate, "original": original, "kind": sp.kind})
            words = original.split()
            person = self.people.get(" ".join(original.lower().split())) if sp.kind in NAME_KINDS else None
            if len(words) > 1 and person:
                # "Rossi" alone in the answer comes back too
                for word, sur in zip(words, person):
                    mapping.append({"surrogate": sur, "original": word, "kind": sp.kind})
            inside += len(_WORDS.findall(original))
            at = sp.end
        parts.append(self.text[at:])
        n_words = len(_WORDS.findall(self.text))
        acc = Accounting(n_tokens=n_words, n_perturbed=len(self.spans), kept={"undetected": max(0, n_words - inside)})
        return Sanitized("".join(parts), acc, None, mapping)


__all__ = ["CONDITION", "Surrogate"]
