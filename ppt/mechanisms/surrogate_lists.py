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
NAMED = {w: names for names in (*MONTHS, *DAYS) for w in names}
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
    """``value`` with every digit replaced by a uniform digit, every month or day name by a uniform one of its
    list (full or short, as written), and under a code kind every letter by a uniform letter of its case (hex
    under MAC_ADDRESS); None when nothing in it would be drawn (a date written "yesterday": it gets a
    placeholder). Only the format is read: which characters are digits, letters or names, and the rest."""
    pieces = list(_FORMAT_PIECE.finditer(value))
    code = kind in CODE_KINDS
    drawn = [m for m in pieces if m.group().isdigit() or code or m.group() in NAMED]
    if not drawn:
        return None
    u = rng.random(sum(len(m.group()) if (code and not m.group().isdigit()) else 1 for m in drawn))
    out, at, k = [], 0, 0
    for m in drawn:
        piece = m.group()
        out.append(value[at : m.start()])
        if piece.isdigit():
            out.append(str(int(u[k] * 10)))
            k += 1
        elif piece in NAMED and not code:
            names = NAMED[piece]
            out.append(names[int(u[k] * len(names))])
            k += 1
        else:
            alphabet = "abcdef" if kind == "MAC_ADDRESS" else "abcdefghijklmnopqrstuvwxyz"
            letters = [alphabet[int(x * len(alphabet))] for x in u[k : k + len(piece)]]
            out.append("".join(c.upper() if o.isupper() else c for c, o in zip(letters, piece)))
            k += len(piece)
        at = m.end()
    out.append(value[at:])
    return "".join(out)


__all__ = [
    "CODE_KINDS",
    "EMAIL_DOMAINS",
    "EMAIL_KINDS",
    "FORMAT_KINDS",
    "NAME_KINDS",
    "PLACE_KINDS",
    "Candidates",
    "lists",
    "reshape",
]
