"""People's names that a statistical NER misses or cuts short: a gazetteer of given names and surnames across
cultures, honorifics, and the contexts in which people name people.

Why beside spaCy: a small English NER labels many non-English names ORG or nothing ("Väinö Otila"), marks part
of a name ("Maho <PERSON_1>"), and never sees a lower-case name ("i told maria"). The gazetteer
(``ppt/data/names.json.gz``, generated from Faker's person providers of 86 locales by ``scripts/build_names.py``)
tells a name word from an English one; a name word that is also an English word ("Will", "Hope", "Grace") is
marked only with other evidence: a surname beside it, an honorific, or a context ("my husband Will", "Hi Grace,").

Rules, each giving one PERSON span from the first to the last word of the name:
  1. an honorific and the name words after it ("Dr. Okafor", "Mrs Nguyen-Tran"), the honorific included;
  2. a run of two or more capitalised words (particles "van", "de", "bin", ... and initials "J." inside) with a
     given name or surname of the gazetteer that is not an English word, or a given name followed by a surname;
     or of two or more capitalised words none of which is an English word ("Maho Tanaka");
  3. one capitalised given name that is not an English word ("Priya", "Kwame"), and a lower-case one ("maria");
  4. after a cue ("my wife", "Hi", "Dear", "named", "my name is", a chat speaker's "Name:", a sign-off line), the
     next name words, capitalised or not, where they are not English words (or capitalised gazetteer names);
places as a courtesy of the same gazetteer: a country name anywhere, and after a preposition of place ("in",
"to", "from") capitalised words no dictionary or name list has ("in Rzeszów", "to TEEBAR"); and
:meth:`NameDetector.widen` grows any detector's PERSON span over the name words around it and a preceding
honorific. Runs that hold an organisation's or a place's head word ("Hospital", "Street", "Bank") are left to the
other detectors.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources

from ppt.detect.base import Span

VERSION = "2"
HONORIFICS = frozenset(
    "mr mrs ms miss mx dr prof professor sir dame lord lady rev revd fr father sister brother mme mlle mademoiselle "
    "madame monsieur herr frau señor senor señora senora sra srta dona doña don shri smt sri mister missus "
    "sheikh imam rabbi pastor judge capt captain col sgt lt officer det detective nurse coach auntie uncle".split()
)
# honorifics that are ordinary words too: a name only with a capitalised word after them
WEAK_HONORIFICS = frozenset("father sister brother uncle auntie judge officer nurse coach lord lady don".split())
PARTICLES = frozenset(
    "van von de da del della der den di du le la los las bin binti ibn al el dos das ten ter y e af zu st".split()
)
# a run of capitalised words with one of these names an organisation or a place, not a person
HEADS = frozenset(
    "hospital clinic university college school academy institute bank street st road rd avenue ave lane boulevard "
    "blvd drive way court place square city county state republic kingdom party church mosque temple "
    "synagogue cathedral inc ltd llc plc gmbh corp corporation company co group foundation association society "
    "center centre station airport hotel restaurant cafe museum library department ministry council committee "
    "office agency service services club team united national international airlines motors insurance health "
    "medical pharmacy hall tower bridge river lake mountain island beach valley north south east west new "
    "january february march april may june july august september october november december monday tuesday "
    "wednesday thursday friday saturday sunday christmas easter ramadan".split()
)
RELATIONS = (
    "wife husband partner boyfriend girlfriend fiance fiancé fiancee fiancée spouse son daughter child kid baby "
    "mother mom mum mama father dad papa brother sister bro sis uncle aunt auntie cousin niece nephew grandson "
    "granddaughter grandma grandmother grandpa grandfather grandparent friend bestie roommate flatmate housemate "
    "neighbour neighbor boss manager supervisor colleague coworker co-worker teammate employee assistant intern "
    "doctor dr therapist counsellor counselor psychiatrist dentist nurse gp lawyer attorney solicitor accountant "
    "teacher tutor coach student pupil classmate landlord landlady tenant client patient caregiver carer nanny "
    "ex stepson stepdaughter stepmother stepfather stepmom stepdad mother-in-law father-in-law sister-in-law "
    "brother-in-law son-in-law daughter-in-law"
).split()
_REL = "|".join(sorted(map(re.escape, RELATIONS), key=len, reverse=True))
# cues after which the next words are a person's name
CUE = re.compile(
    rf"(?:\b(?:my|our|his|her|their|your|the)\s+(?:(?:new|old|late|former|younger|older|elder|little|big|best|"
    rf"ex-)\s*)?(?:{_REL})s?,?\s+"
    r"|\b(?:hi|hello|hey|dear|thanks|thank\s+you|cheers|greetings|good\s+morning|good\s+afternoon|attn:?)\s*,?\s+"
    r"|\b(?:named|called|name\s+is|name's|i\s+am|i'm|im|this\s+is|it's|signed|regards|sincerely|from)\s*[:,]?\s+"
    r"|\b(?:name|patient|employee|applicant|tenant|client|student|customer|contact|sender|recipient|from|to|"
    r"cc|attendee|guest|passenger|insured|claimant|beneficiary|parent|guardian)\s*:\s*"
    r"|^[ \t]*(?:\[[^\]\n]{1,30}\][ \t]*)?(?=[^\W\d_][\w'’.-]*(?:[ \t]+[^\W\d_][\w'’.-]*)?[ \t]*:)"
    r"|(?:^|\n)[ \t]*(?:best|regards|best\s+regards|kind\s+regards|warm\s+regards|thanks|thank\s+you|cheers|"
    r"sincerely|yours|yours\s+truly|love|xo|xx|br|many\s+thanks)[ \t]*[,!.]?[ \t]*\n[ \t]*)",
    re.IGNORECASE | re.MULTILINE,
)
PLACE_CUE = re.compile(
    r"\b(?:in|to|from|near|at|outside|around|towards|visiting|visit|via)\s+(?=[^\W\d_])", re.IGNORECASE
)
NAMING = re.compile(r"named|called|name\s+is|name's|signed|\bname\s*:", re.IGNORECASE)
WORD = re.compile(r"[A-Z]\.(?!\w)|[^\W\d_]+(?:['’-][^\W\d_]+)*")
_POSSESSIVE = re.compile(r"['’]s$")


@lru_cache(maxsize=1)
def _data() -> tuple[dict, str]:
    raw = resources.files("ppt").joinpath("data/names.json.gz").read_bytes()
    return json.loads(gzip.decompress(raw)), hashlib.sha256(raw).hexdigest()[:8]


@lru_cache(maxsize=1)
def countries() -> re.Pattern:
    """Every country name of the gazetteer as written or in capitals, on word boundaries, longest first."""
    names = sorted(_data()[0].get("countries", ()), key=len, reverse=True)
    alternation = "|".join(re.escape(n) for n in names + [n.upper() for n in names if len(n) > 3])
    return re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])")


@lru_cache(maxsize=1)
def gazetteer() -> tuple[frozenset[str], frozenset[str], frozenset[str], str]:
    """(given names, surnames, English words, 8 hex digits naming the file) from the shipped gazetteer."""
    data, tag = _data()
    return (
        frozenset(data["first"]),
        frozenset(data["last"]),
        frozenset(data["english"]),
        tag,
    )


class NameDetector:
    """PERSON spans by gazetteer, honorific and context (the module's rules)."""

    def __init__(self) -> None:
        self.first, self.last, self.english, tag = gazetteer()
        stop = resources.files("ppt.data").joinpath("stopwords_en.txt").read_text()
        self.stop = frozenset(w for w in stop.split("\n") if w and not w.startswith("#"))
        self.signature = f"names:{VERSION}#{tag}"

    # -- word classes -------------------------------------------------------------------------------------
    def _bare(self, w: str) -> str:
        return _POSSESSIVE.sub("", w.rstrip("."))

    def ordinary(self, value: str) -> bool:
        """Whether a name holds an ordinary English word (then only its capitalised form names the person)."""
        return any(self._is_english(w) for _, _, w in self._words(value))

    def _is_english(self, w: str) -> bool:
        low = self._bare(w).lower()
        return low in self.english or low in self.stop

    def _name_word(self, w: str) -> bool:
        """In the gazetteer, as written or title-cased ("maria" -> "Maria")."""
        b = self._bare(w)
        t = b[:1].upper() + b[1:].lower() if b.islower() or b.isupper() else b
        return t in self.first or t in self.last or b in self.first or b in self.last

    def _given(self, w: str) -> bool:
        b = self._bare(w)
        return b in self.first or (b[:1].upper() + b[1:].lower()) in self.first

    def _surname(self, w: str) -> bool:
        b = self._bare(w)
        return b in self.last or (b[:1].upper() + b[1:].lower()) in self.last

    def _capital(self, w: str) -> bool:
        return w[:1].isupper() and not (w.isupper() and len(self._bare(w)) > 3)

    def _initial(self, w: str) -> bool:
        return len(w) == 2 and w[0].isupper() and w[1] == "."

    def _head(self, w: str) -> bool:
        return self._bare(w).lower() in HEADS

    def _strong(self, w: str) -> bool:
        """A capitalised word that is a name and nothing else: in the gazetteer, not an English word."""
        return self._name_word(w) and not self._is_english(w)

    # -- rules --------------------------------------------------------------------------------------------
    def _words(self, text: str) -> list[tuple[int, int, str]]:
        return [(m.start(), m.end(), m.group()) for m in WORD.finditer(text)]

    def _adjacent(self, text: str, a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
        gap = text[a[1] : b[0]]
        if gap in (" ", "-") or (gap == "" and a[2].endswith(".")):
            return True
        return gap == ". " and (len(a[2]) == 1 or a[2].lower() in HONORIFICS)  # "J. Smith", "Dr. Okafor"

    def _runs(self, text: str, words: list[tuple[int, int, str]]) -> list[list[int]]:
        """Indices of maximal runs of capitalised words (particles and initials inside) on one line."""
        runs: list[list[int]] = []
        cur: list[int] = []
        for i, (_, _, w) in enumerate(words):
            joins = cur and self._adjacent(text, words[cur[-1]], words[i])
            ok = self._capital(w) or (joins and self._bare(w).lower() in PARTICLES)
            if ok and (not cur or joins):
                cur.append(i)
                continue
            if cur:
                runs.append(cur)
            cur = [i] if self._capital(w) else []
        if cur:
            runs.append(cur)
        # particles never end a run
        out = []
        for r in runs:
            while r and not self._capital(words[r[-1]][2]):
                r = r[:-1]
            if r:
                out.append(r)
        return out

    def _name_span(self, words, idx: list[int]) -> tuple[int, int] | None:
        """The person's name in a run of capitalised words, or None (rule 2 and 3)."""
        ws = [words[i][2] for i in idx]
        if any(self._head(w) for w in ws):
            return None
        core = [i for i, w in zip(idx, ws) if not self._initial(w) and self._bare(w).lower() not in PARTICLES]
        if not core:
            return None
        # drop leading English words (a sentence's first word: "Ask Priya", "Can Kwame"): those that are no given
        # name, and those that are one while a word after them is a name and nothing else but no surname
        while core and self._is_english(words[core[0]][2]):
            rest = [words[i][2] for i in core[1:]]
            given = self._given(words[core[0]][2])
            if given and (not any(self._strong(w) for w in rest) or (rest and self._surname(rest[0]))):
                break
            core = core[1:]
        if not core:
            return None
        cw = [words[i][2] for i in core]
        strong = [self._strong(w) for w in cw]
        if len(core) == 1:
            w = cw[0]
            return (words[core[0]][0], words[core[0]][1]) if self._given(w) and strong[0] else None
        given_then_surname = self._given(cw[0]) and self._surname(cw[-1])
        unknown = all(not self._is_english(w) for w in cw)  # "Maho Tanaka": two words no dictionary has
        if any(strong) or given_then_surname or unknown:
            start = words[idx[0]][0] if idx[0] != core[0] and self._initial(words[idx[0]][2]) else words[core[0]][0]
            return start, words[core[-1]][1]
        return None

    def _honorific_spans(self, text: str, words) -> list[tuple[int, int]]:
        out = []
        for i, (s, _, w) in enumerate(words):
            low = self._bare(w).lower()
            if low not in HONORIFICS or i + 1 >= len(words):
                continue
            if low in WEAK_HONORIFICS and not w[0].isupper():
                continue
            j, end = i + 1, None
            while j < len(words) and j <= i + 4 and text[words[j - 1][1] : words[j][0]] in (" ", "", "-", ". "):
                nxt = words[j][2]
                if self._capital(nxt) and not self._head(nxt) and (end is None or not self._is_english(nxt)):
                    end = words[j][1]
                elif end is not None and self._bare(nxt).lower() in PARTICLES:
                    pass
                else:
                    break
                j += 1
            if end is not None:
                out.append((s, end))
        return out

    def _cue_spans(self, text: str, words) -> list[tuple[int, int]]:
        starts = {s: i for i, (s, _, _) in enumerate(words)}
        out = []
        for m in CUE.finditer(text):
            i = starts.get(m.end())
            if i is None:
                continue
            naming = NAMING.search(m.group()) is not None  # "named", "my name is": any non-English word
            end = None
            for j in range(i, min(i + 3, len(words))):
                if j > i and not self._adjacent(text, words[j - 1], words[j]):
                    break
                w = words[j][2]
                if self._head(w) or self._initial(w):
                    break
                english = self._is_english(w)
                if self._capital(w):
                    ok = not english or self._name_word(w)
                else:
                    ok = not english and (naming or self._name_word(w)) and len(self._bare(w)) > 2
                if not ok:
                    break
                end = words[j][1]
            if end is not None:
                out.append((words[i][0], end))
        return out

    def _place_spans(self, text: str, words) -> list[tuple[int, int, str]]:
        """Places: a country name anywhere; after a preposition of place ("in", "to", "from", "near"), one to
        four capitalised or upper-case words none of which is an English word or a given name ("in Rzeszów",
        "to TEEBAR", "based in KAUFMANNBERG")."""
        out = [(m.start(), m.end(), "GPE") for m in countries().finditer(text)]
        starts = {s: i for i, (s, _, _) in enumerate(words)}
        for m in PLACE_CUE.finditer(text):
            i = starts.get(m.end())
            end = None
            for j in range(i, min(i + 4, len(words))) if i is not None else ():
                if j > i and not self._adjacent(text, words[j - 1], words[j]):
                    break
                w = words[j][2]
                if not w[:1].isupper() or self._is_english(w) or self._given(w) or self._head(w):
                    break
                end = words[j][1]
            if end is not None:
                out.append((words[i][0], end, "GPE"))
        return out

    def _lower_given(self, words) -> list[tuple[int, int]]:
        """A lower-case given name that is no English word ("i told maria"): people type names in lower case."""
        return [
            (s, e) for s, e, w in words if w.islower() and len(w) > 2 and self._given(w) and not self._is_english(w)
        ]

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        out = []
        for text in texts:
            words = self._words(text)
            found = self._honorific_spans(text, words) + self._cue_spans(text, words) + self._lower_given(words)
            for run in self._runs(text, words):
                span = self._name_span(words, run)
                if span:
                    found.append(span)
            spans = [Span(s, e, "PERSON") for s, e in found]
            out.append(spans + [Span(s, e, k) for s, e, k in self._place_spans(text, words)])
        return out

    def widen(self, text: str, spans: Sequence[Span]) -> list[Span]:
        """Each PERSON span grown over the capitalised name words right before and after it ("Maho" before
        spaCy's "Tanaka") and over an honorific before it ("Dr."): a name is replaced whole."""
        if not any(s.kind == "PERSON" for s in spans):
            return list(spans)
        words = self._words(text)
        starts = [w[0] for w in words]
        ends = [w[1] for w in words]
        out = []
        for sp in spans:
            if sp.kind != "PERSON":
                out.append(sp)
                continue
            start, end = sp.start, sp.end
            i = bisect_left(starts, start)  # the span's first word
            while 0 < i < len(words) and self._adjacent(text, words[i - 1], words[i]):
                w = words[i - 1][2]
                honorific = self._bare(w).lower() in HONORIFICS and w[0].isupper()
                english = self._is_english(w)
                before = text[: words[i - 1][0]]
                first = not before.rstrip(" \t\"'(") or before.rstrip()[-1] in ".!?\n:"
                name = self._capital(w) and not self._head(w) and (not english or (self._given(w) and not first))
                if not (honorific or name or self._initial(w)):
                    break
                i -= 1
                start = words[i][0]
                if honorific:
                    break
            j = bisect_right(ends, end) - 1  # the span's last word: it ends at `end`, or the next starts there
            if not (j >= 0 and (ends[j] == end or (j + 1 < len(words) and starts[j + 1] == end))):
                j = len(words)
            while j + 1 < len(words) and self._adjacent(text, words[j], words[j + 1]):
                w = words[j + 1][2]
                if not (self._capital(w) and (not self._is_english(w) or self._surname(w)) and not self._head(w)):
                    break
                j += 1
                end = words[j][1]
            out.append(Span(start, end, sp.kind))
        return out
