"""Generate ppt/data/surrogates.json (the public lists of ``ppt.mechanisms.surrogate``) from Faker's data.

Needs Faker (``pip install faker``, MIT); run from the repository root: ``python scripts/build_surrogates.py``.
The lists are facts (common US given names and surnames, which Faker takes from US Census/SSA tables; names of
real towns from Faker's locale files), filtered to ASCII, capitalised, one or two words, and without names
that are also common English words (a surrogate "April" or "Brown" would be put back wrongly by ``ppt restore``
wherever the answer uses the word). ppt never imports Faker at run time.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OUT = Path("ppt/data/surrogates.json")
CITY_LOCALES = ("en_IN", "en_BD", "pt_PT", "ro_RO", "pl_PL", "id_ID", "hr_HR", "sl_SI", "sv_SE", "cs_CZ", "es_ES")
# names that are common English words (restore replaces every occurrence of a surrogate in the answer)
COMMON_WORDS = set(
    """april may june august hope faith grace joy will bill mark rose summer autumn dawn crystal amber ruby destiny
    heather holly ivy lily jasmine iris violet daisy pearl robin penny sandy rusty chase hunter mason carter cooper
    tanner taylor parker rich sunny star page brown white young king hill green wood long price bell hall cook
    black gray grey rice stone lane wells west north south east day love bond cross hand may moore banks walker
    fisher baker miller porter ward ford chance frank guy jack jim rob sue art dean earl hunt park reed rock
    shepherd short small strong sharp little major norman tucker bishop butler carpenter mills burns barber
    knight marsh snow frost beach lake field fields brooks woods bush rivers river glass gold silver hart wolf
    fox lamb nash pope sherman payne powers church chapman shaw dale gene ray roy van victor max august sterling
    noble lucky""".split()
)
WORD = re.compile(r"[A-Z][a-z]+(?:[ -][A-Z][a-z]+)?")


def _keep(name: str) -> bool:
    return bool(WORD.fullmatch(name)) and name.lower() not in COMMON_WORDS


def build() -> dict:
    import faker
    from faker.providers.person.en_US import Provider as Person

    first = sorted({n for n in [*Person.first_names_female, *Person.first_names_male] if _keep(n)})
    last = sorted({n for n in Person.last_names if _keep(n)})
    cities: set[str] = set()
    for locale in CITY_LOCALES:
        mod = __import__(f"faker.providers.address.{locale}", fromlist=["Provider"])
        cities.update(c for c in getattr(mod.Provider, "cities", ()) if _keep(c))
    return {
        "source": f"Faker {faker.VERSION} (MIT): en_US person names; towns of {', '.join(CITY_LOCALES)}",
        "first": first,
        "last": last,
        "city": sorted(cities),
    }


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, indent=0, ensure_ascii=True) + "\n", encoding="utf-8")
    print({k: len(v) for k, v in data.items() if isinstance(v, list)}, file=sys.stderr)


if __name__ == "__main__":
    main()
