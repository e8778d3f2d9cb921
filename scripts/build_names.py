"""Generate ppt/data/names.json.gz (the name gazetteer of ``ppt.detect.names``) from Faker's person providers.

Faker (MIT, maintained on the package index) carries given names and surnames for 86 locales: Finnish, Czech,
Yoruba, Hindi, Vietnamese, Turkish, Brazilian, ... . The gazetteer is generated once into the package, so
detection needs neither Faker nor its 86 module imports at run time. Only names written in a Latin, Greek or
Cyrillic script of at least two letters are kept (a one-letter "name" is an initial, and CJK names are not
whitespace-separated words). ``common`` lists the gazetteer's words that are also ordinary lower-case English words
(Debian's ``wamerican`` word list: "will", "hope", "grace", "bill"): such a word is a name only with other evidence;
``english`` is that word list itself (lower-case words only), to tell an unknown capitalised word ("Otila") from
an ordinary word at the start of a sentence.

Run from the repository root: ``python scripts/build_names.py`` (needs ``pip install faker`` and
``apt-get install wamerican``).
"""

from __future__ import annotations

import gzip
import importlib
import json
import pkgutil
import re
import sys
from pathlib import Path

WORDS = Path("/usr/share/dict/american-english")
OUT = Path(__file__).resolve().parent.parent / "ppt" / "data" / "names.json.gz"
NAME = re.compile(r"^[A-Za-zÀ-ÖØ-öø-ɏͰ-ϿЀ-ӿḀ-ỿ][A-Za-zÀ-ÖØ-öø-ɏͰ-ϿЀ-ӿḀ-ỿ'’-]+$")


def _strings(value) -> list[str]:
    if isinstance(value, dict):
        value = list(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [v for v in value if isinstance(v, str)]
    return []


def faker_names() -> tuple[set[str], set[str], str]:
    import faker
    import faker.providers.person as person

    first: set[str] = set()
    last: set[str] = set()
    for module in pkgutil.iter_modules(person.__path__):
        provider = getattr(importlib.import_module(f"{person.__name__}.{module.name}"), "Provider", None)
        for attr in dir(provider) if provider is not None else ():
            target = first if attr.startswith("first_names") else last if attr.startswith("last_names") else None
            if target is None:
                continue
            for value in _strings(getattr(provider, attr)):
                for word in value.split():  # "Mary Ann", "van der Berg": each word
                    if NAME.match(word) and word[0].isupper():
                        target.add(word)
    return first, last, faker.VERSION


def countries() -> list[str]:
    from faker.providers.address.en import Provider

    extra = ("United States", "United Kingdom", "USA", "UK", "England", "Scotland", "Wales", "Czech Republic")
    return sorted({c.split(" (")[0] for c in Provider.countries if "," not in c} | set(extra))


def main() -> int:
    if not WORDS.exists():
        print(f"needs {WORDS} (apt-get install wamerican)", file=sys.stderr)
        return 1
    english = {w.strip() for w in WORDS.read_text(encoding="utf-8").splitlines() if w.strip().islower()}
    first, last, version = faker_names()
    common = sorted(w for w in first | last if w.lower() in english)
    data = {
        "source": f"faker {version} person providers (all locales); common: Debian wamerican",
        "first": sorted(first),
        "last": sorted(last),
        "common": common,
        # country names (Faker's English address provider), marked as places wherever they are written
        "countries": countries(),
        # lower-case English words, to tell a capitalised unknown word ("Otila") from a sentence's first word
        "english": sorted(w for w in english if w.isalpha() and len(w) > 1),
    }
    payload = (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    OUT.write_bytes(gzip.compress(payload, mtime=0))  # mtime 0: the same names give the same bytes
    print(f"{OUT}: {len(first)} given names, {len(last)} surnames, {len(common)} also English words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
