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

from ppt.detect.categories import MAX_WORDS, WORD
from ppt.detect.category_sources import COMMON, EXCLUDE, GENERIC, MODERN, PERSONAL_ROOTS, ROOTS

NOUN_ONLY = ("health", "finances", "occupation", "immigration", "criminal")
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
# category -> roots of the nouns whose derived adjectives are the framed tier ("I'm diabetic", "they're
# evangelical", "because I'm Jewish"): the conditions for health (not its treatments: "binding", "specific"), every
# root for the identities
ADJECTIVE_FRAMES = {
    "health": (
        "ill_health.n.01",
        "disease.n.01",
        "disorder.n.01",
        "mental_disorder.n.01",
        "mental_illness.n.01",
        "symptom.n.01",
        "pregnancy.n.01",
        "disability.n.01",
        "addiction.n.01",
        "injury.n.01",
        "infertility.n.01",
        "sick_person.n.01",
    ),
    "religion": ROOTS["religion"] + PERSONAL_ROOTS["religion"],
    "political": ROOTS["political"],
    "ethnicity": ROOTS["ethnicity"],
}
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


def _closure(wn, names: tuple[str, ...]) -> set:
    """The synsets of ``names`` and (but for a name written "=name") their hyponyms; a name missing from this
    WordNet is skipped."""
    out = set()
    for name in names:
        alone = name.startswith("=")
        try:
            root = wn.synset(name.lstrip("="))
        except Exception:  # noqa: BLE001 - a root missing from this WordNet: skip it
            continue
        out.add(root)
        if not alone:
            out.update(root.closure(lambda s: s.hyponyms()))
    return out


def _alone(wn, names: tuple[str, ...]) -> set:
    """The synsets of the roots written "=name": only the lemma that names each is taken ("gambling", not its
    synonym "gaming"; "savings", not "nest egg")."""
    return {s for s in _closure(wn, tuple(n for n in names if n.startswith("=")))}


def _words(wn, category: str, synsets: set, alone: frozenset = frozenset()) -> tuple[set[str], set[str], set[str]]:
    """The phrases of ``synsets`` whose most frequent noun sense is among them (see the module's rules), and the
    identity words that are mostly adjectives of another first sense (the framed tier: "gay", "conservative"), and
    the capitalised words to match only as written (see :func:`_lower_noun`)."""
    phrases, framed, cased = set(), set(), set()
    for s in synsets:
        for lemma in s.lemma_names():
            phrase = _phrase(lemma)
            if phrase is None or any(c.isdigit() for c in phrase):  # "August 6", a feast: a date first
                continue
            if s in alone and lemma.lower() != s.name().split(".")[0] or phrase in COMMON:
                continue
            first = wn.synsets(lemma, pos="n")
            if not (first and (first[0] in synsets or (category in IDENTITY and _in(first[0], synsets)))):
                continue  # the word's most frequent sense is elsewhere
            # "found", "want", "major": mostly verbs or adjectives in another sense. Not applied where the
            # adjective carries the same meaning ("gay", "Catholic", "Asian", "socialist")
            if category in NOUN_ONLY and " " not in phrase and _mostly_not_a_noun(wn, lemma):
                continue
            if category in IDENTITY and " " not in phrase and _adjective_first(wn, lemma):
                framed.add(phrase)
                continue
            if lemma[:1].isupper() and not lemma.isupper() and _lower_noun(wn, lemma):
                cased.add(lemma.replace("_", " "))  # "Quiche" (a people): not the quiche, a food
                continue
            phrases.add(lemma if lemma.isupper() else phrase)  # "ADD", "AIDS": in capitals only (add, aids)
    return phrases, framed, cased


def _lower_noun(wn, lemma: str) -> bool:
    """WordNet writes the word in lower case too, as another noun ("quiche", the food, beside "Quiche")."""
    word = lemma.lower()
    return any(lm == word for s in wn.synsets(word, pos="n") for lm in s.lemma_names())


def _adjective_first(wn, word: str) -> bool:
    """A word used more as an adjective or adverb than as a noun, whose first adjective sense is not glossed with
    an identity's words: "prior" (prior to), "straight", "gay" (cheerful first), "cardinal" (a cardinal number),
    "conservative" (resistant to change); not "Christian" ("... Christianity"), "Marxist" ("... Marxism")."""
    if not _mostly_not_a_noun(wn, word) or wn.synsets(word, pos="n")[0].lexname() != "noun.person":
        return False
    first = next((s for s in wn.synsets(word) if s.pos() in ("a", "s")), None)
    gloss = first.definition().lower() if first else ""
    return not re.search(r"sexual|relig|church|christ|god|faith|sect|polit|party|ism\b|ist\b|ethnic|people", gloss)


def _derived_adjectives(wn, synsets: set, generic: set) -> set[str]:
    """Adjectives WordNet derives from (or relates to) the nouns of ``synsets`` but the generic ones, where that
    is the adjective's most frequent sense: diabetic (diabetes), pregnant (pregnancy), autistic, epileptic,
    Jewish (Jew), evangelical."""
    out = set()
    for s in synsets - generic:
        for lemma in s.lemmas():
            for d in lemma.derivationally_related_forms():
                if d.synset().pos() in ("a", "s"):
                    senses = wn.synsets(d.name(), pos="a")
                    if senses and senses[0] == d.synset() and _phrase(d.name()):
                        out.add(_phrase(d.name()))
    for a in wn.all_synsets("a"):
        for lemma in a.lemmas():
            if any(p.synset() in synsets and p.synset() not in generic for p in lemma.pertainyms()):
                senses = wn.synsets(lemma.name(), pos="a")
                if senses and senses[0] == a and _phrase(lemma.name()):
                    out.add(_phrase(lemma.name()))
    return out


def _drugs(wn) -> set[str]:
    """Medicine names (generic and brand) of the ``drug-named-entity-recognition`` package whose entries have a
    MedlinePlus page (the drugs a patient is told about), single words of five letters or more: (those that are no
    WordNet word or one whose first noun sense is a drug or medicine, the others). Read from the package's
    dictionary file without importing it (its import reads a cache under the home directory)."""
    import bz2
    import importlib.util
    import pickle
    from pathlib import Path

    spec = importlib.util.find_spec("drug_named_entity_recognition")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install drug-named-entity-recognition (the medicine names of the lexicon)")
    with bz2.open(Path(spec.submodule_search_locations[0]) / "drug_ner_dictionary.pkl.bz2", "rb") as f:
        d = pickle.load(f)  # noqa: S301 - the package's own data file
    consumer = {c for c, data in d["drug_canonical_to_data"].items() if "medline_plus_id" in data}
    medicines = _closure(wn, ("drug.n.01", "medicine.n.02", "agent.n.03")) - _closure(wn, EXCLUDE["health"])
    plain, other = set(), set()
    for variant, canonicals in d["drug_variant_to_canonical"].items():
        if len(variant) < 5 or not re.fullmatch(r"[a-z]+(?:-[a-z]+)*", variant) or not set(canonicals) & consumer:
            continue
        senses = wn.synsets(variant, pos="n")
        if wn.synsets(variant) and not (senses and senses[0] in medicines):
            other.add(variant)  # "lithium", the element first: a medicine only in its frame ("lithium level")
        else:
            plain.add(variant)
    return plain, other


def _modern(wn, category: str, words: tuple[str, ...]) -> set[str]:
    """The :data:`MODERN` words of ``category``, after checking WordNet lacks each as a noun ("undocumented" is
    only its adjective "not supported by documents")."""
    for w in words:
        lemma = w.replace(" ", "_")  # a capitalised word is checked as written ("SNAP", not snap)
        same = (lambda lm: lm == lemma) if w != w.lower() else (lambda lm: lm.lower() == lemma)
        if any(same(lm) for s in wn.synsets(lemma, pos="n") for lm in s.lemma_names()):
            raise ValueError(f"{w!r} ({category}) is a WordNet noun: list its synset, not the word")
    return set(words)


def build(path: str) -> dict[str, int]:
    """Write the lexicon from WordNet and the drug list (NLTK, the WordNet files and drug-named-entity-recognition
    needed); the number of phrases per category and tier."""
    from ppt.mechanisms.prosan.wordnet import load_wordnet

    wn = load_wordnet()
    generic = _closure(wn, tuple("=" + g for g in GENERIC))
    tiers: dict[str, dict[str, list[str]]] = {
        k: {} for k in ("categories", "cased", "personal", "personal_cased", "framed")
    }
    for category, roots in ROOTS.items():
        excluded = _closure(wn, EXCLUDE.get(category, ()))
        personal_roots = PERSONAL_ROOTS.get(category, ())
        alone = frozenset(_alone(wn, roots + personal_roots))
        synsets = _closure(wn, roots) - excluded
        phrases, framed, cased = _words(wn, category, synsets - generic, alone)
        if category in BELIEFS:
            phrases |= _adherents(wn, {p for s in synsets for p in map(_phrase, s.lemma_names()) if p})
        if category in PARTIES:  # members of a party (personal root) or of another group of the category
            plain, capitalised = _members(wn, synsets | _closure(wn, PERSONAL_ROOTS.get(category, ())))
            phrases |= plain
            cased |= capitalised - {p for p in capitalised if p.lower() in phrases}
        if category in ADJECTIVES:
            phrases |= _adjectives(wn, synsets)
        for name, spellings in ALIASES.items():
            if wn.synset(name) in synsets:
                phrases |= {_alias(wn, wn.synset(name), s) for s in spellings}
        personal_synsets = _closure(wn, personal_roots) - excluded
        # the personal tier: its roots' words, and the generic roots' own words ("disease", "medicine")
        personal, framed_too, personal_cased = _words(wn, category, personal_synsets | (synsets & generic), alone)
        framed |= framed_too
        modern = _modern(wn, category, MODERN.get(category, ()))
        personal |= {w for w in modern if w == w.lower()}
        personal_cased |= {w for w in modern if w != w.lower()}
        if category == "health":
            drugs, colliding = _drugs(wn)
            personal |= drugs
            framed |= colliding
        if category in ADJECTIVE_FRAMES:
            conditions = _closure(wn, ADJECTIVE_FRAMES[category]) - excluded - generic
            framed |= _derived_adjectives(wn, conditions, generic)
        # WordNet's capitalised abbreviations ("HIV", "ADD", "AAA"): as written and about someone only ("AAA
        # batteries", "add", "How does HIV PrEP work?")
        personal_cased |= {p for p in phrases | personal if p.isupper()}
        phrases -= personal_cased
        personal -= phrases | personal_cased
        framed -= phrases | personal
        for key, words in (
            ("categories", phrases),
            ("cased", cased),
            ("personal", personal),
            ("personal_cased", personal_cased),
            ("framed", framed),
        ):
            if words:
                tiers[key][category] = sorted(words)
    # the tiers are disjoint across categories too: a word another category always marks is not personal or
    # framed here, one another category marks about someone is not framed here
    always = {p for words in tiers["categories"].values() for p in words}
    tiers["personal"] = {c: [w for w in ws if w not in always] for c, ws in tiers["personal"].items()}
    marked = always | {p for words in tiers["personal"].values() for p in words}
    tiers["framed"] = {c: [w for w in ws if w not in marked] for c, ws in tiers["framed"].items()}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(
            {
                "source": "WordNet 3.0; medicine names: drug-named-entity-recognition (MedlinePlus entries)",
                "roots": ROOTS,
                "personal_roots": PERSONAL_ROOTS,
                "exclude": EXCLUDE,
                "generic": GENERIC,
                "aliases": ALIASES,
                **tiers,
            },
            f,
            indent=0,
            sort_keys=True,
        )
        f.write("\n")
    return {f"{k}.{c}": len(p) for k, t in tiers.items() for c, p in t.items()}


if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "ppt" / "data" / "categories.json"
    print(json.dumps(build(str(target))))
    sys.exit(0)
