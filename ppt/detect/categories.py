"""Sensitive words that are not named entities: health, sexual orientation, religion, political opinion,
ethnicity, finances, immigration status, criminal record (GDPR art. 9's special categories and art. 10's
offences, plus two that identify), and occupation, from WordNet.

Why a shipped lexicon, and what it is generated from: :mod:`ppt.detect.category_sources`.

Three tiers, because a word of a category is not always about someone:

- ``categories`` (and ``cased``): the condition, orientation, belief or people itself (``diabetes``, ``gay``,
  ``Sikh``): marked wherever it is written;
- ``personal`` (and ``personal_cased``): words that are private when the text is about a person and a topic
  otherwise (``chemotherapy``, ``insulin``, ``visa``, ``mosque``, ``fraud``, ``savings``, a drug's name, the
  generic ``disease``): marked only in a text that refers to someone (:data:`PERSON`: a personal pronoun, a
  relative, a title before a name, a record's name field). "How does chemotherapy work?" keeps its words;
  "since my chemotherapy started" does not;
- ``framed``: adjectives of a condition or an identity (``diabetic``, ``pregnant``, ``autistic``, ``Jewish``,
  ``evangelical``; ``gay`` and ``conservative``, whose first adjective sense is another), and medicine names that
  are another WordNet word first (``lithium``): marked only right after a word that makes them about someone
  (:data:`FRAME_BEFORE`: "I'm", "is", "being", "my", "felt", "taking") or before one that makes them a
  treatment (:data:`FRAME_AFTER`: "lithium level", "lithium 800mg"), in a text about someone.

Phrasings no word list holds ("voted Reform", "charged with fraud", "an H-1B", "we're two women", "£2,000 I
borrowed") are :data:`RULES`: regular expressions per category, compiled once, about a person by construction and
applied, like the personal tier, only to a text that refers to someone.

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
from ppt.detect.category_sources import EXCLUDE, GENERIC, MODERN, PERSONAL_ROOTS, ROOTS

CATEGORIES = tuple(ROOTS)
# the readable preset's categories (issue 35): occupation is left out, measured: on prompts with no personal data
# it replaces ordinary words ("developer", "servers", "lessons"); it stays available by name
DEFAULT_CATEGORIES = tuple(c for c in CATEGORIES if c != "occupation")
MAX_WORDS = 4
WORD = re.compile(r"[A-Za-z]+(?:[-'][A-Za-z]+)*")

# A text refers to a person: a personal pronoun (a lower-case "i" only where it is not a loop variable), a
# relative or a party to a record, a title before a name, a record's name or birth-date field
PERSON = re.compile(
    r"(?i:\b(?:me|my|mine|myself|we|we're|we've|we'd|us|our|ours|ourselves|you|you're|you've|your|yours|yourself"
    r"|he|he's|he'd|him|his|himself|she|she's|she'd|her|hers|herself|i'm|i've|i'd|i'll|im|ive)\b)"
    r"|\bI\b|(?<!for )\bi\b(?!\s+in\b)(?=\s+[a-z])"
    r"|(?i:\b(?:mum|mom|mother|dad|father|son|daughter|wife|husband|partner|boyfriend|girlfriend|fianc[ée]e?"
    r"|spouse|brother|sister|aunt|auntie|aunty|uncle|nephew|niece|cousin|grandma|grandmother|grandpa|grandfather"
    r"|granny|grandson|granddaughter|patient|client|tenant|employee|colleague|coworker|neighbou?r)s?\b)"
    r"|\b(?:Mr|Mrs|Ms|Mx|Dr|Miss)\.?\s+[A-Z]"
    r"|(?im:^\s*(?:name|full name|patient|dob|date of birth|nationality|religion|diagnosis)\s*:)"
)
# framed words: marked right after one of these (skippable words between: "I'm very religious", "is a devout")
# ...
FRAME_BEFORE = frozenset(
    """my his her their your our has have had having with from after since i'm im am is are was were be been being
    become became feel felt feeling seems we're they're he's she's you're diagnosed raised born devout practising
    practicing on taking take takes took prescribed started stopped""".split()
)
FRAME_SKIP = frozenset(
    """a an the very quite really almost so also not now still bad severe mild chronic minor major small recent
    ongoing serious new first strict""".split()
)
# ... or right before one of these: a measured treatment ("lithium level", "lithium 800mg", "insulin pump")
FRAME_AFTER = re.compile(
    r"\s*(?:\d+(?:\.\d+)?\s?(?:mg|mcg|µg)\b|(?:level|levels|dose|doses|dosage|tablets?|pills?|pump|injections?"
    r"|prescription|treatment|clinic|meds)\b)"
)

_MONEY = (
    r"(?:(?:US|A|C|NZ|R|HK|S)?[$£€₹¥]|(?:Rs|INR|EUR|GBP|USD|CHF|AUD|CAD)\.?\s?)\s?\d[\d,.]*(?:\s?(?:k|m|bn|million|"
    r"thousand|grand))?\b|\b\d[\d,.]*\s?(?:dollars|pounds|euros|rupees|quid|bucks|reais|pesos)\b"
)
_DIGIT = re.compile(r"\d")
_WORDS_TO_3 = r"(?:\s+(?!(?:in|on|at|last|when|and|but|after|before|because|so|while)\b)[\w'-]+){1,3}"
# category -> patterns (case-insensitive unless written (?-i:...)); a match's group "m" is marked where the
# pattern has one, else the whole match. Written for this project from how people describe themselves and others
# in prompts (issue 35); none is a list of values
RULES: dict[str, tuple[str, ...]] = {
    "health": (
        # pregnancy counted in weeks or months
        r"\b(?:\d{1,2}|a few|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s*(?:weeks?|wks?|months?)"
        r"\s+(?:pregnant|along)\b",
        r"\btype[- ]?(?:1|2|one|two|I|II)\s+diabet\w*",
        r"\b(?:i'm|i am|im|he's|he is|she's|she is|is|was|am)\s+(?P<m>type[- ]?(?:1|2|one|two))\b",
        # a medicine with its dose ("metformin 500mg")
        r"\b[A-Za-z][A-Za-z-]{3,}\s?\d+(?:\.\d+)?\s?(?:mg|mcg|µg)\b",
        r"\b(?:been|stayed|staying|getting|got|am|is|was|i'm|he's|she's)\s+(?P<m>sober(?:\s+(?:for\s+)?\d+\s+(?:days|weeks|months|years))?)",
        r"\b(?:relapsed|relapse|relapsing)\b",
        r"\bsuicid\w+",
        r"\b(?:overdosed|self[- ]harm\w*)\b",
        r"\b(?:AA|NA)\s+meetings?\b",
        r"\b(?:sick|medical|maternity|paternity)\s+leave\b",
        r"\b(?:on|has|have|had|having|needs?|started|starts|for)\s+(?P<m>(?:kidney\s+|peritoneal\s+)?dialysis)\b",
        # an event of someone's health that its word alone does not say ("stroke", first a blow; "operation")
        r"\b(?:had|has|have|having|suffered|after|since|recovering from|found)\s+(?:a|an|his|her|my|their)\s+"
        r"(?:mild\s+|minor\s+|major\s+|massive\s+|small\s+)?(?:stroke|seizure|fit|miscarriage|operation|transplant"
        r"|lump|breakdown|relapse|overdose|growth)\b",
        r"\b(?:my|his|her|their|our|your)\s+(?:stroke|seizures?|miscarriage|operation|transplant|lump|breakdown)\b",
        r"\b(?:stroke|transplant|miscarriage|seizure)\s+(?:assessment|list|clinic|team|ward|recovery|survivor)\b",
        r"\b(?:tore|torn|tearing|fractured|sprained|dislocated|ruptured|herniated)\s+(?:(?:his|her|my|their|your|a|the)"
        r"\s+)?(?:left\s+|right\s+)?[\w-]+",
        r"\b(?:heart|lung|kidney|liver|skin|thyroid|bowel|bladder|back|knee|hip|spine|spinal|eye|mental[- ]health"
        r"|medical|health|pre-existing|chronic|neurological|autoimmune)\s+(?:condition|problems?|issues?|troubles?"
        r"|surgery|operation|disease|failure)\b",
    ),
    "sexual_orientation": (
        r"\b(?:i'm|i am|im|he's|he is|she's|she is|they're|we're|is|are|was|being|be|as|identify as|identifies as"
        r"|came out as|come out as|coming out as)\s+(?:a\s+|an\s+|not\s+|openly\s+|both\s+)?(?P<m>bi|trans|ace)\b"
        r"(?![-'])",
        r"\btrans\s+(?:kid|teen|person|people|woman|man|women|men|girl|boy|daughter|son|partner)\b",
        r"\bwe(?:'re|’re| are)\s+(?:both\s+)?(?:two\s+)?(?:women|men|guys|girls|lesbians|gay)\b",
        r"\b(?:his|he and his|he has a)\s+(?:husband|boyfriend)\b",
        r"\b(?:her|she and her|she has a)\s+(?:wife)\b",
        r"\bcame out\b(?=\s+(?:as|to)\b)",
        r"\b(?:married|marrying|engaged)\s+to\s+another\s+(?:man|woman)\b",
    ),
    "religion": (
        r"\b(?:to|at|after|before|from|attend|attends|attended|miss|missed)\s+(?:(?:the|our|my|his|her|friday|sunday)"
        r"\s+)?(?P<m>mass|prayers|shul|gurdwara|mandir|jummah|jumu'ah|bible study|sunday school|church)\b",
        r"\b(?:convert(?:ed|ing)?|conversion)\s+to\s+(?-i:[A-Z]\w+)",
        r"\b(?:fasting|fast)\s+(?:for|during)\s+(?:Ramadan|Lent|Yom Kippur)\b",
        r"\b(?:my|his|her|our|their)\s+(?P<m>faith|imam|rabbi|pastor|priest|vicar|guru)\b",
    ),
    "political": (
        r"\bvot(?:ed|e|es|ing)\s+(?:for\s+)?(?:the\s+)?(?-i:[A-Z][\w-]+)(?:\s+(?-i:[A-Z][\w-]+))?",
        r"\b(?:a|an|the|as)\s+(?P<m>(?-i:[A-Z][\w-]+)\s+(?:voter|supporter|voters|supporters|activist|member)s?)\b",
        r"\b(?:trade|labou?r)\s+union\b",
        r"\bunion\s+(?:rep|reps|representative|steward|member|membership|dues|organi[sz]er|official|branch)\b",
        r"\b(?:joined|join|joining|in|left)\s+(?:the|a|my)\s+union\b",
        r"\bmember of (?:the\s+)?(?-i:[A-Z]\w+)(?:\s+(?-i:[A-Z]\w+)){0,2}\s+(?-i:Party|Union)\b",
        r"(?-i:\b[A-Z]\w+\s+Party)\s+(?:member|candidate|activist|councillor|councilor|official|voter|supporter)s?\b",
        r"\b(?-i:[A-Z]\w+)\s+(?:councillor|councilor)\b",
        r"\b(?:canvass(?:ed|ing)?|campaign(?:ed|ing)?)\s+for\s+(?:the\s+)?(?-i:[A-Z][\w-]+)",
    ),
    "finances": (
        # an amount of money lost, owed, borrowed, taken or paid by someone
        r"\b(?:lost|lose|losing|owe|owes|owed|owing|borrowed|borrow|lent|lend|loan|debt|debts|debited|withdrawn"
        r"|took|taken|stole|stolen|scammed|paid|covered|behind|arrears|overdrawn|earn|earns|earned|salary|income"
        r"|savings|refund|transferred|transfer|fined|spent|gambled|bet)\b[^.\n;]{0,40}?(?P<m>" + _MONEY + ")",
        r"(?P<m>" + _MONEY + r")\s+(?:loan|debt|overdraft|in debt|owed|in arrears|of debt|credit card debt)\b",
        r"(?P<m>"
        + _MONEY
        + r")\s+(?:(?:was|were|got|has been|had been|have been)\s+)?(?:debited|withdrawn|taken|stolen"
        r"|lost|owed|borrowed|lent|missing|gone|scammed)\b",
        r"\b(?:(?:\d+|a few|a couple of|two|three|four|five|six|several)\s+(?:months?|weeks?|years?|payments?)\s+)?"
        r"behind\s+(?:on|with)\s+(?:the\s+|my\s+|his\s+|her\s+|our\s+|their\s+)?(?:rent|payments?"
        r"|bills?|mortgage|loan|child support|support|council tax|credit card|repayments?)\b(?:\s*\("
        + _MONEY
        + r"\))?",
        r"\blost\s+(?:my|his|her|their|our)\s+(?:job|income|savings|home|house)\b",
        r"\b(?:laid off|made redundant|on benefits|on welfare|food bank|credit score|bailiffs?|debt relief)\b",
        r"\ball\s+(?:my|his|her|our|their)\s+savings\b",
    ),
    "immigration": (
        r"\b(?:(?!(?:the|a|an|my|his|her|our|their|your|this|that|any|no|which|what|need|get|apply|for)\b)"
        r"(?:(?-i:[A-Z][\w-]*)|student|work|working|tourist|visitor|spouse|spousal|partner|family|fianc[ée]e?|skilled"
        r"|graduate|business|transit|investor|dependant|dependent|worker|global|talent|(?-i:[A-Z]-?\d\w*))\s+){1,3}visas?\b",
        r"(?-i:\b(?:H-?1B|(?:H|L|O|E|F|J|K|EB)-\d[AB]?|B-?1/B-?2|I-\d{2,3}[A-Z]?)\b)",
        r"\b(?:green card|work permit|right to work|right to remain|indefinite leave|asylum(?:[- ]seekers?)?"
        r"|temporary protect(?:ion|ed status)|overstay(?:ed|ing)?|deport(?:ed|ation|ing)?|naturali[sz](?:ed|ation))\b",
        r"(?-i:\b(?:ILR|BRP|TPS)\b)",
        r"\b(?:citizenship|immigration|visa)\s+(?:application|interview|hearing|case|appeal|status|test|lawyer)\b",
        r"\b(?:illegal|irregular|undocumented)\s+(?:immigrants?|migrants?|aliens?)\b",
    ),
    "criminal": (
        r"\b(?:arrested|convicted|jailed|imprisoned|incarcerated|indicted|prosecuted|sentenced|charged with|charged"
        r"\s+for|pleaded guilty|pled guilty|plead guilty|plea deal)(?:\s+(?:for|of|with|to|over))?(?:"
        + _WORDS_TO_3
        + ")?",
        r"\b(?:caught|accused of|suspected of|done for|busted for|nicked for|cautioned for|fined for)\s+(?:\w+ing"
        r"|(?:a\s+)?(?:theft|fraud|assault|burglary|robbery|possession|drink[- ]driving|drunk[- ]driving|DUI))\b",
        r"\b(?:on|out on|violated|violating|breached)\s+(?:his\s+|her\s+|my\s+)?(?:probation|parole|bail)\b",
        r"\b(?:probation|parole)\s+officer\b",
        r"\b(?:previous|prior|past|spent|unspent|criminal|DUI|DWI|drink[- ]driving|felony|misdemeanou?r|a|my|his|her"
        r"|their)\s+convictions?\b",
        r"\bserved\s+(?:\d+|a|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?:years?|months?)\b"
        r"(?:\s+(?:in\s+(?:prison|jail)|inside|for(?:\s+[\w-]+){1,2}))?",
        r"\b(?:in|out of|released from|got out of|went to|sent to|time in)\s+(?:prison|jail|juvie|custody)\b",
        r"\b(?:community service|suspended sentence|house arrest|criminal charges?|police caution|ankle tag"
        r"|protective order)\b",
        r"\b(?:drunk|drink)[- ]driv(?:ing|er)\s+(?:charge|conviction|offence|offense|ban)\b",
    ),
}


@lru_cache(maxsize=1)
def _shipped() -> str:
    return resources.files("ppt").joinpath("data/categories.json").read_text(encoding="utf-8")


def lexicon_tag() -> str:
    """8 hex digits naming the shipped lexicon's content and the detector's rules and frames (either changed is
    another detector)."""
    rules = json.dumps([RULES, PERSON.pattern, sorted(FRAME_BEFORE), sorted(FRAME_SKIP), FRAME_AFTER.pattern])
    return hashlib.sha256((_shipped() + rules).encode()).hexdigest()[:8]


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(_shipped())


def _table(key: str) -> dict[str, str]:
    """phrase -> its category, from one tier of the shipped lexicon; the order of CATEGORIES decides a phrase
    listed twice."""
    out: dict[str, str] = {}
    for category in CATEGORIES:
        for phrase in _data().get(key, {}).get(category, []):
            out.setdefault(phrase, category)
    return out


@lru_cache(maxsize=1)
def cased_lexicon() -> dict[str, str]:
    """phrase (as WordNet capitalises it) -> its category: words matched only with that capital, because the
    lower-case word means something else first ("Green", a member of the Green Party; green, the colour)."""
    return _table("cased")


@lru_cache(maxsize=1)
def lexicon() -> dict[str, str]:
    """phrase (lower case, words separated by one space) -> its category: the words marked wherever they are
    written."""
    return _table("categories")


@lru_cache(maxsize=1)
def personal_lexicon() -> dict[str, str]:
    """phrase -> its category: words marked only in a text that refers to a person (lower case; and the
    capitalised ones of ``personal_cased``, matched as written)."""
    return {**_table("personal_cased"), **_table("personal")}


@lru_cache(maxsize=1)
def framed_lexicon() -> dict[str, str]:
    """phrase -> its category: words marked only after :data:`FRAME_BEFORE` or before :data:`FRAME_AFTER`."""
    return _table("framed")


@lru_cache(maxsize=None)
def _rules(chosen: frozenset[str]) -> tuple[tuple[re.Pattern[str], str, bool], ...]:
    """The chosen categories' rules, compiled once: (pattern, category, whether it marks an amount of money, which
    needs a digit: skipped on a text without one)."""
    return tuple(
        (re.compile(p, re.IGNORECASE), c, "(?P<m>" + _MONEY in p)
        for c in CATEGORIES
        if c in chosen
        for p in RULES.get(c, ())
    )


class CategoryDetector:
    """Spans of the lexicon's phrases in the chosen categories, longest phrase first at each word, and of the
    rules' matches; where two overlap, the longer."""

    def __init__(self, categories: Sequence[str] = CATEGORIES) -> None:
        unknown = sorted(set(categories) - set(CATEGORIES))
        if unknown:
            raise ValueError(f"unknown categories: {', '.join(unknown)} (known: {', '.join(CATEGORIES)})")
        chosen = frozenset(categories)
        self.phrases = {p: c for p, c in lexicon().items() if c in chosen}
        self.cased = {p: c for p, c in cased_lexicon().items() if c in chosen}
        self.personal = {p: c for p, c in personal_lexicon().items() if c in chosen}
        self.framed = {p: c for p, c in framed_lexicon().items() if c in chosen}
        self.rules = _rules(chosen)
        tag = "all" if chosen == set(CATEGORIES) else ".".join(c for c in CATEGORIES if c in chosen)
        self.signature = f"categories-{tag}@wordnet-3.0#{lexicon_tag()}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[Span]:
        about = PERSON.search(text) is not None
        words = [(m.start(), m.end(), m.group()) for m in WORD.finditer(text)]
        spans, i = [], 0
        while i < len(words):
            for n in range(min(MAX_WORDS, len(words) - i), 0, -1):
                category = self._category(text, words, i, n, about)
                if category is not None:
                    spans.append(Span(words[i][0], words[i + n - 1][1], category.upper()))
                    i += n
                    break
            else:
                i += 1
        if about:
            digits = _DIGIT.search(text) is not None
            for pattern, category, needs_digit in self.rules:
                if needs_digit and not digits:
                    continue
                for m in pattern.finditer(text):
                    g = "m" if "m" in pattern.groupindex and m.group("m") else 0
                    if m.end(g) > m.start(g):
                        spans.append(Span(m.start(g), m.end(g), category.upper()))
        return _longest(spans)

    def _category(self, text: str, words: list, i: int, n: int, about: bool) -> str | None:
        """The category of the run of ``n`` words at ``i``: the lexicon's lower-case phrase, else its capitalised
        one; a personal-tier phrase in a text about someone; a framed one in its frame."""
        written = " ".join(w for _, _, w in words[i : i + n])
        for form in (written, written[:-1]) if n == 1 and written[-1:] in "sS" else (written,):  # plurals
            phrase = form.lower()
            category = self.phrases.get(phrase, self.cased.get(form))
            if category is None and about:
                category = self.personal.get(phrase, self.personal.get(form))
                if category is None and phrase in self.framed and self._framed(text, words, i, n):
                    category = self.framed[phrase]
            if category is not None:
                return category
        return None

    @staticmethod
    def _framed(text: str, words: list, i: int, n: int) -> bool:
        j = i - 1
        while j >= 0 and j >= i - 3 and words[j][2].lower() in FRAME_SKIP:
            j -= 1
        if j >= 0 and words[j][2].lower() in FRAME_BEFORE and not text[words[j][1] : words[j + 1][0]].strip(" "):
            return True
        return FRAME_AFTER.match(text, words[i + n - 1][1]) is not None


def _longest(spans: list[Span]) -> list[Span]:
    """The spans, longest first, without any that overlaps a longer one; sorted by start."""
    kept: list[Span] = []
    for s in sorted(spans, key=lambda s: (-(s.end - s.start), s.start)):
        if all(s.end <= k.start or s.start >= k.end for k in kept):
            kept.append(s)
    return sorted(kept, key=lambda s: s.start)


__all__ = [
    "CATEGORIES",
    "DEFAULT_CATEGORIES",
    "EXCLUDE",
    "GENERIC",
    "MAX_WORDS",
    "MODERN",
    "PERSONAL_ROOTS",
    "PERSON",
    "ROOTS",
    "RULES",
    "WORD",
    "CategoryDetector",
    "cased_lexicon",
    "framed_lexicon",
    "lexicon",
    "lexicon_tag",
    "personal_lexicon",
]
