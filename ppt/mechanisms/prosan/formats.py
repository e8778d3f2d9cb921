"""E-mail addresses as ProSan items: found by pattern, replaced keeping their format.

Why: spaCy tags an e-mail address ADJ, PROPN or X depending on its context, so ProSan's POS rule made most
of them ineligible, and one tagged PROPN went to the masked LM (a word in place of an address) or, having
digits, kept its letters with fresh digits (``anna.smith17@...`` still names Anna Smith). An address is
eligible whatever its tag and, when protected, every letter and digit of the local part and of the domain's
labels is drawn afresh (letters keep their case, digits stay digits) while '@', dots, other punctuation
and the top-level domain are kept: the output still reads as an address, none of its characters tell
the original.

Phone numbers need nothing of this: spaCy splits ``415-555-1234`` into NUM pieces, which ProSan already
protects with fresh digits.
"""

from __future__ import annotations

import re

import numpy as np

EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")
EMAIL_RULE = (
    "e-mail addresses (pattern) are eligible whatever their POS tag; a protected one gets fresh "
    "random letters (same case) and digits in its local part and domain labels, keeping '@', "
    "punctuation and the top-level domain"
)
_LOWER = np.array(list("abcdefghijklmnopqrstuvwxyz"))


def is_email(word: str) -> bool:
    return EMAIL.fullmatch(word) is not None


def fresh_email(word: str, g: np.random.Generator) -> str:
    """``word`` with every letter and digit before the top-level domain drawn afresh (one draw per character:
    uniform in 0..259, letter = x % 26, digit = x % 10, both exactly uniform)."""
    cut = word.rfind(".")
    body, tld = (word[:cut], word[cut:]) if cut > word.find("@") else (word, "")
    chars = np.array(list(body), dtype=object)
    alnum = np.flatnonzero([c.isascii() and c.isalnum() for c in body])
    draws = g.integers(0, 260, size=len(alnum))
    orig = chars[alnum].astype(str)
    letters = _LOWER[draws % 26]
    new = np.where(
        np.char.isdigit(orig),
        (draws % 10).astype(str),
        np.where(np.char.isupper(orig), np.char.upper(letters), letters),
    )
    chars[alnum] = new
    return "".join(chars.tolist()) + tld


__all__ = ["EMAIL", "EMAIL_RULE", "fresh_email", "is_email"]
