"""What :mod:`ppt.mechanisms.surrogate` draws from: each span kind's public candidate list and the format rules.

The lists are shipped package data: given names, surnames and towns (``ppt/data/surrogates.json``, generated
once by ``scripts/build_surrogates.py`` from Faker's public tables), and the special categories' phrases of
the detector's own lexicon (``ppt/data/categories.json``: a health condition by a health condition). Nothing
here reads a replaced value: a list is chosen by the span's kind alone.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources

import numpy as np

NAME_KINDS = frozenset({"PERSON", "PER"})
PLACE_KINDS = frozenset({"GPE", "LOC", "FAC", "LOCATION"})
EMAIL_KINDS = frozenset({"EMAIL_ADDRESS", "EMAIL"})
# kinds whose value is a number or code: the digits (and a code's letters) are drawn, the rest of the span kept
FORMAT_KINDS = frozenset(
    {
        "PHONE_NUMBER",
        "CREDIT_CARD",
        "US_SSN",
        "US_BANK_NUMBER",
        "US_PASSPORT",
        "US_DRIVER_LICENSE",
        "IP_ADDRESS",
        "DATE_TIME",
        "DATE",
        "TIME",
        "CARDINAL",
        "MONEY",
        "PERCENT",
        "QUANTITY",
        "ORDINAL",
        "AGE",
    }
)
CODE_KINDS = frozenset({"IBAN_CODE", "MAC_ADDRESS", "CRYPTO"})  # letters are drawn too (same case; MAC: hex)
EMAIL_DOMAINS = ("example.com", "example.org", "example.net")  # reserved for examples (RFC 2606): never anyone's
MONTHS = (
    "January February March April May June July August September October November December".split(),
    "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(),
)
DAYS = (
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split(),
    "Mon Tue Wed Thu Fri Sat Sun".split(),
)
NAMED = {w.lower(): names for names in (*MONTHS, *DAYS) for w in names}  # matched case-insensitively
# kinds whose value is a date, time or quantity: a word of the span other than a month or day name (drawn), an
# ordinal suffix (drawn with its number) or one of FORMAT_WORDS is content ("Ramadan 2023", "5 million yen"):
# the span gets a placeholder
VALUE_KINDS = frozenset({"DATE_TIME", "DATE", "TIME", "CARDINAL", "MONEY", "PERCENT", "QUANTITY", "ORDINAL", "AGE"})
ORDINAL_SUFFIXES = frozenset({"st", "nd", "rd", "th"})
# a fixed public list: function words, a.m./p.m./o'clock, magnitudes and time units ("second" is left out: it is
# also an ordinal)
FORMAT_WORDS = frozenset(
    """the of on at in and to from by between until till through or a an per am pm m o clock hundred thousand
    million billion trillion k bn percent cent seconds minute minutes hour hours day days week weeks month months
    year years old ago""".split()
)
_FORMAT_PIECE = re.compile(r"\d|[A-Za-z]+")
# category candidates: single words (a phrase such as "bad debt" would show "debt" whatever the value was)
MAX_PHRASE_WORDS = 1
# slurs and insults that WordNet lists under a category: never written into a user's prompt as a surrogate
OFFENSIVE = frozenset(
    """abo chinaman chink darkey darkie darky hymie injun jap jigaboo kike nigga nigger nigra pickaninny redskin
    sheeny slant-eye squaw tom wog yid dike dyke fag faggot fagot fucker homo nance poof poove pouf shirtlifter
    commie pinko bolshie bolshy cretin idiot imbecile moron retard spastic mongoloid mongol lunatic cripple
    loony nutcase psycho whore hooker pimp bitch bastard slut tart""".split()
)


class Candidates:
    """One kind's candidate list: ``text[j]`` and its lower-case words (to refuse a candidate that already
    appears in the released text, or that an earlier span of the record got)."""

    def __init__(self, items: list[str]) -> None:
        self.text = list(dict.fromkeys(items))
        self.words = [frozenset(t.lower().split()) for t in self.text]

    def __len__(self) -> int:
        return len(self.text)


@lru_cache(maxsize=1)
def lists() -> dict[str, Candidates]:
    """ "first", "last", "city", and one per special category (upper case, as the detector names the kind)."""
    from ppt.detect.categories import CATEGORIES, lexicon

    data = json.loads(resources.files("ppt").joinpath("data/surrogates.json").read_text(encoding="utf-8"))
    out = {key: Candidates(data[key]) for key in ("first", "last", "city")}
    lex = lexicon()
    for category in CATEGORIES:  # a phrase listed under two categories belongs to the one the detector gives it
        phrases = [
            p for p, c in lex.items() if c == category and len(p.split()) <= MAX_PHRASE_WORDS and p not in OFFENSIVE
        ]
        out[category.upper()] = Candidates(sorted(phrases))
    return out


def reshape(value: str, kind: str, rng: np.random.Generator) -> str | None:
    """``value`` with every digit replaced by a uniform digit, every month or day name (any case) by a uniform
    one of its list (full or short, as written, in the written case pattern), an ordinal suffix by the one of the
    drawn number ("23rd" -> "86th"), and under a code kind every letter by a uniform letter of its case (hex
    under MAC_ADDRESS). None when nothing in it would be drawn (a date written "yesterday"), or when a date or
    quantity span holds any other word than FORMAT_WORDS ("Ramadan 2023"): it gets a placeholder. Only the format
    is read: which characters are digits, letters, names or format words, and the rest."""
    code = kind in CODE_KINDS
    pieces = list(_FORMAT_PIECE.finditer(value))
    drawn = []
    for m in pieces:
        piece, low = m.group(), m.group().lower()
        if piece.isdigit() or code or low in NAMED or _is_suffix(value, m):
            drawn.append(m)
        elif kind in VALUE_KINDS and low not in FORMAT_WORDS:
            return None
    if not any(m.group().isdigit() or code or m.group().lower() in NAMED for m in drawn):
        return None
    out, at = [], 0
    for m in drawn:
        piece = m.group()
        out.append(value[at : m.start()])
        if piece.isdigit():
            out.append(str(int(rng.integers(0, 10))))
        elif code:
            alphabet = "abcdef" if kind == "MAC_ADDRESS" else "abcdefghijklmnopqrstuvwxyz"
            letters = [alphabet[int(x)] for x in rng.integers(0, len(alphabet), size=len(piece))]
            out.append("".join(c.upper() if o.isupper() else c for c, o in zip(letters, piece)))
        elif piece.lower() in NAMED:
            names = NAMED[piece.lower()]
            out.append(_case_like(names[int(rng.integers(0, len(names)))], piece))
        else:  # an ordinal suffix: the one of the number just drawn
            number = re.search(r"\d+$", "".join(out)).group()
            out.append(_case_like(ordinal_suffix(int(number)), piece))
        at = m.end()
    out.append(value[at:])
    return "".join(out)


def ordinal_suffix(n: int) -> str:
    """ "st", "nd", "rd" or "th" for ``n`` (11th, 12th, 13th)."""
    if n % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _is_suffix(value: str, m: re.Match) -> bool:
    return m.group().lower() in ORDINAL_SUFFIXES and m.start() > 0 and value[m.start() - 1].isdigit()


def _case_like(word: str, written: str) -> str:
    """``word`` in the case pattern of ``written``: all upper, all lower, or as listed (title case)."""
    if len(written) > 1 and written.isupper():
        return word.upper()
    return word.lower() if written.islower() else word


__all__ = [
    "CODE_KINDS",
    "EMAIL_DOMAINS",
    "EMAIL_KINDS",
    "FORMAT_KINDS",
    "NAME_KINDS",
    "PLACE_KINDS",
    "VALUE_KINDS",
    "Candidates",
    "lists",
    "ordinal_suffix",
    "reshape",
]
