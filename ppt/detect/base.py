"""The detector interface, span merging, the propagation of a record's detected values to their other
occurrences, and the user's lists."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Span:
    """Characters ``[start, end)`` of a text that a detector marks sensitive, and what kind they are."""

    start: int
    end: int
    kind: str


class Detector(Protocol):
    """``detect(texts)`` gives each text's sensitive spans; ``signature`` names the detector and its version
    (it goes into the stamp's signature: the same text is protected the same way only by the same detector)."""

    signature: str

    def detect(self, texts: Sequence[str]) -> list[list[Span]]: ...


def snap_to_words(text: str, spans: Sequence[Span]) -> list[Span]:
    """Each span grown to whole words: a span that starts or ends inside a word ("40" of "40th", "Tom" of
    "Tomás") takes the whole word, so no part of a word is released beside a placeholder and a surrogate is
    restored whole; spans are trimmed of surrounding white space."""
    out = []
    n = len(text)
    for s in spans:
        start, end = s.start, s.end
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start >= end:
            continue
        while start > 0 and text[start - 1].isalnum() and text[start].isalnum():
            start -= 1
        while end < n and text[end].isalnum() and text[end - 1].isalnum():
            end += 1
        out.append(s if (start, end) == (s.start, s.end) else Span(start, end, s.kind))
    return out


ORG_KINDS = frozenset({"ORG", "ORGANIZATION"})
# a company's legal form after its name: "Owl Rock Capital Corporation", "Grove Inc.", "Telecom Italia S.p.A."
_LEGAL_FORM = re.compile(
    r"(?:[ \t]*,?[ \t]+(?:\([A-Z]\)[ \t]+)?(?:Inc|Incorporated|Corp|Corporation|Co|Company|Ltd|Limited|LLC|L\.L\.C|LLP|"
    r"PLC|plc|Plc|GmbH|AG|SA|S\.A|SAS|SCA|SpA|S\.p\.A|BV|B\.V|NV|N\.V|Oy|AB|ASA|A/S|Pty|Pte|Bhd|KK|K\.K|Holdings?|"
    r"Group|Trust|Partners|& Co|and Co)(?![\w'’-])\.?)+"
)


def widen_organisations(text: str, spans: Sequence[Span]) -> list[Span]:
    """Each organisation span grown over the legal form after it ("Owl Rock Capital" + " Corporation"): the
    name is replaced whole."""
    out = []
    for s in spans:
        m = _LEGAL_FORM.match(text, s.end) if s.kind in ORG_KINDS else None
        out.append(Span(s.start, m.end(), s.kind) if m else s)
    return out


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    """Spans sorted by start, overlapping ones merged (the first kind kept)."""
    out: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if out and s.start < out[-1].end:
            last = out[-1]
            out[-1] = Span(last.start, max(last.end, s.end), last.kind)
        else:
            out.append(s)
    return out


# kinds whose words each name the person: "Lucas" alone, after "Lucas Costa", is Lucas (spaCy's and presidio's label)
PERSON_KINDS = frozenset({"PERSON"})
# words of a detected name that do not name the person (a title is kept when it stands alone)
TITLES = frozenset("Mr Mrs Ms Miss Mx Dr Prof Sir Dame Lord Lady Rev St Jr Sr".split())
_NAME_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_POSSESSIVE = re.compile(r"['’]s$")
# a value's other occurrence is a whole token: not part of a longer word, number, address or decimal ("34" in
# "34.5", "Lucas" in "Lucas.Costa@...")
_BEFORE, _AFTER = r"(?<!\w)(?<!\w[.,:/@-])", r"(?!\w)(?![.,:/@-]\w)"
PROPAGATION = "same-text.person-words.anycase-names"  # the policy's name in the detector's signature


def _value(text: str) -> str:
    return _POSSESSIVE.sub("", text.strip())


def propagate(text: str, spans: Sequence[Span], ordinary: Callable[[str], bool] | None = None) -> list[Span]:
    """``spans`` plus every other occurrence in ``text`` of what they mark (detection is per mention; a record
    names its person, city or condition several times, and one missed mention releases the value).

    Policy: (1) the text of each span (each line of it, trimmed, without a possessive "'s") is marked wherever it
    occurs again as a whole token, case-sensitively, with the span's kind; (2) each capitalised word of a
    :data:`PERSON_KINDS` span of two or more words (given name, surname; not :data:`TITLES` or initials) is marked
    wherever it occurs alone with that capital: "Lucas" after "Lucas Costa", but not "will" after "Will Smith"
    (the lower-case word is another word); (3) with ``ordinary`` (a test for ordinary words), a person's name or
    name word that is no ordinary word is marked in any case too ("MARIA", "maria" after "Maria Lopez"). One
    compiled alternation per record, longest value first."""
    kinds: dict[str, str] = {}
    for s in spans:
        for value in map(_value, text[s.start : s.end].splitlines()):  # a model's span may run over a line break
            if len(value) < 2:
                continue
            kinds.setdefault(value, s.kind)
            words = [_value(w) for w in _NAME_WORD.findall(value)] if s.kind in PERSON_KINDS else []
            for w in words if len(words) > 1 else ():
                if len(w) > 1 and w[0].isupper() and w not in TITLES:
                    kinds.setdefault(w, s.kind)
    if not kinds:
        return list(spans)
    alternation = "|".join(re.escape(v) for v in sorted(kinds, key=len, reverse=True))
    found = re.finditer(f"{_BEFORE}(?:{alternation}){_AFTER}", text)
    out = [*spans, *(Span(m.start(), m.end(), kinds[m.group()]) for m in found)]
    if ordinary is not None:
        anycase = {v.lower(): k for v, k in kinds.items() if k in PERSON_KINDS and not ordinary(v)}
        if anycase:
            alternation = "|".join(re.escape(v) for v in sorted(anycase, key=len, reverse=True))
            found = re.finditer(f"{_BEFORE}(?:{alternation}){_AFTER}", text, re.IGNORECASE)
            out += [Span(m.start(), m.end(), anycase[m.group().lower()]) for m in found]
    return out


def read_list(path: str, what: str) -> list[str]:
    """The non-empty, non-comment lines of a deny- or allow-list file (PptError 66 when unreadable)."""
    from ppt.io import ExitCode, PptError

    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f]
    except OSError as e:
        raise PptError(f"cannot read the {what} {path}: {e.strerror}", ExitCode.NOINPUT) from None
    except UnicodeDecodeError:
        raise PptError(f"the {what} {path} is not UTF-8 text", ExitCode.DATAERR) from None
    return [line for line in lines if line and not line.startswith("#")]


def list_tag(items: Sequence[str]) -> str:
    """8 hex digits naming a list of *public* settings (an unkeyed hash: never use it on a user's deny- or
    allow-list, whose content a hash in a stamp would give away to anyone trying candidate names)."""
    return hashlib.sha256("\n".join(sorted(set(items))).encode()).hexdigest()[:8]
