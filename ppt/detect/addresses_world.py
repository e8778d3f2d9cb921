"""Postal addresses of the rest of the world, a second pass of :mod:`ppt.detect.addresses`: a street between two
numbers ("Furuveien 141"), a street word first ("Via Garibaldi 8"), units alone, US military mail, "the corner of X
and Y"; each grown over the unit, town, country and postcode pieces after it."""

from __future__ import annotations

import re

from ppt.detect.address_parts import _DIGIT, _UPPER, CAP, KIND, _after_name, _snap
from ppt.detect.base import Span

# -- addresses of the rest of the world: a street between two numbers, a street word first, units, military mail --
_NAMEW = rf"{CAP}[\w'’-]*"
_PARTICLE = (
    r"(?:de|la|del|da|do|dos|das|di|du|des|le|von|van|der|den|y|e|al|el|nad|pod|u|na|sur|sous|am|an|im|bei|ob|upon|"
    r"on|en|aan|op|i)"
)
_STREET_FIRST = (
    r"(?:R\.?|Rua|Av\.|Avda\.?|Avenida|Calle|C/|Carrer|Rúa|Via|Viale|Vicolo|Piazza|Piazzale|Corso|Largo|Stradone|"
    r"Strada|ul\.|ulica|al\.|Aleja|Plac|Travessa|Alameda|Praça|Rambla|Paseo|Camino|Plaza|Ronda|Boulevard|Bd\.?|"
    r"Rue|Chemin|Avenue|Quai|Cours|Impasse|Allée|Straße|Strasse|Gasse|Ulitsa|ulitsa|Odos|Sokak|Sok\.|Cadde(?:si)?|"
    r"Jalan|Jl\.|Calea|Utca|utca|Vej|Gata|Vegen|Veien|Laan|Straat|Weg)"
)
_WORDS = rf"{_NAMEW}(?:[ \t]+(?:{_NAMEW}|{_PARTICLE})){{0,4}}"
_ABBR_TYPE = r"(?:Str|Ul|Sok|Cad|Cd|Bd|Av|Pl|Vej|Odos)\."
INTERNATIONAL = re.compile(
    "|".join(
        (
            # "736 Furuveien 141", "6317 Zistelweg 59", "845 ul. Sporna 53", "251 Charilaou Trikoupi Str."
            rf"(?P<between>(?:(?<![\w.,/-])|(?<=\\n))\d{{1,6}}[ \t]+(?P<name>(?:(?:ul|al)\.[ \t]+)?{_WORDS})[ \t]+"
            rf"(?:\d{{1,5}}[A-Za-z]?(?![\w/-])|{_ABBR_TYPE}))",
            # "R José Peixoto 20", "Stradone Antonio Provolo 66", "Calle Mayor, 12"
            rf"(?P<first>(?<![\w-]){_STREET_FIRST}[ \t]+{_WORDS},?[ \t]+\d{{1,5}}[A-Za-z]?(?![\w/-]))",
            # units: "Apt. 914", "Suite 894", "Unit 12B", "Flat 3"
            r"(?P<unit>(?<![\w-])(?:Apt|Apartment|Suite|Ste|Flat|Apto)(?:\.[ \t]*|[ \t]*#[ \t]*|[ \t]+)\d{1,5}[A-Za-z]?"
            r"(?![\w/-]))",
            # US military mail: "Unit 0465 Box 6341 DPO AA 96203", "USS Lahtinen FPO AE 79944"
            r"(?P<military>(?<![\w-])(?:Unit|PSC|USNS|USS|USCGC|CMR)[ \t]+[\w ,]{1,40}?(?:\r?\n|\\n|[ \t,])+[ \t]*"
            r"(?:DPO|FPO|APO)[ \t]+(?:AA|AE|AP)[ \t]+\d{5}(?![\w-]))",
            # "the corner of Arenales 9462 and Panna Ways"
            r"(?P<corner>(?<![\w-])(?:corner|intersection)[ \t]+of[ \t]+[^.?!\n]{3,60}?[ \t]+(?:and|&)[ \t]+"
            rf"{_NAMEW}(?:[ \t]+{_NAMEW}){{0,3}})",
        )
    )
)
# what may follow an address: a unit, a town or country, a postcode, "Country 12345"; after a comma or a line
# break (a real one or a literal "\n", and the "???" of a pasted list), or after a space when it has a digit or is
# written in capitals
_SEP = r"(?P<sep>[ \t]*,[ \t]*|(?:[ \t]*(?:\r?\n|\\n)[ \t]*(?:\?\?\?[ \t]*)?)+|[ \t]+)"
_PIECE = (
    r"(?P<piece>(?:Apt\.?|Apartment|Suite|Ste\.|Unit|Flat|Apto\.?|Bldg\.?)[ \t]*#?[ \t]*\d{1,5}[A-Za-z]?"
    rf"|{CAP}[A-Z{_UPPER}'’-]{{2,}}(?:[ \t-]{CAP}[A-Z{_UPPER}'’-]+)*(?:[ \t]+\d{{3,6}}(?:-\d{{3,4}})?)?"
    rf"|{_NAMEW}(?:[ \t]+(?:{_NAMEW}|{_PARTICLE})){{0,3}}(?:[ \t]+\d{{3,6}}(?:-\d{{3,4}})?)?"
    r"|\d{4,6}(?:-\d{3,4})?|[A-Z]{2}[ \t]+\d{5}(?:-\d{4})?)(?![\w'’-])"
)
CONTINUATION = re.compile(rf"{_SEP}{_PIECE}")
MAX_PIECES = 5
_NOT_TOWN = re.compile(
    r"(?:I|I'm|I'd|Please|Thanks|Thank|The|This|That|It|It's|He|She|We|They|My|Our|Your|Can|Could|Would|Will|"
    r"Do|Does|Did|Is|Are|Call|Meet|Send|Bot|User|Name|Phone|Email|E-mail|Website|Date|Address|Hi|Hello|Dear|"
    r"Regards|Best|Sincerely|Mr|Mrs|Ms|Dr|Cheers|Kind|Warm|Love|Looking|Sent|See|Yours|Many|Talk|Speak)(?![\w'’-])"
)


_LINE_END = re.compile(r"[ \t]*(?:[,.]?[ \t]*(?:\r?\n|\\n|$)|,)")
_MONTHS = frozenset(
    "january february march april may june july august september october november december jan feb mar apr jun "
    "jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday".split()
)


def _ordinary(value: str) -> bool:
    """Every word of ``value`` an English word or a month: a sentence's words, not a town's or a street's."""
    from ppt.detect.names import gazetteer

    english = gazetteer()[2]
    words = re.findall(r"[^\W\d_]+", value)
    return bool(words) and all(w.lower() in english or w.lower() in _MONTHS for w in words)


def _extend(text: str, end: int) -> int:
    """``end`` moved over the unit, town, country and postcode pieces that follow an address."""
    for _ in range(MAX_PIECES):
        m = CONTINUATION.match(text, end)
        if not m:
            break
        sep, value = m.group("sep"), m.group("piece")
        if _NOT_TOWN.match(value):
            break
        spaced = not sep.strip(" \t")
        digits = any(c.isdigit() for c in value)
        if spaced and not digits and not value.isupper():
            break
        own_line = "," not in sep
        if own_line and not digits:  # a line of its own: a town written in title case or capitals, all of it
            words = re.findall(r"[^\W\d_]+", value)
            titled = all(w[0].isupper() or len(w) <= 3 for w in words)
            if not titled or not _LINE_END.match(text, m.end()):
                break
        elif not digits and _ordinary(value):  # after a comma: "Cheers, Tom", a sentence's words
            break  # "Cheers, Tom", "Looking forward": a sentence, not a town
        end = m.end()
    return end


def _plausible(text: str, m: re.Match) -> bool:
    """A street between two numbers is taken when a word of its name is no English word ("Furuveien", not
    "3 Apple 12") and the first number is no count ("I bought 3 ...": :func:`_after_name`)."""
    if m.lastgroup != "between":
        return True
    from ppt.detect.names import gazetteer

    english = gazetteer()[2]
    words = [w.lower() for w in re.findall(r"[^\W\d_]+", m.group("name"))]
    street = any(w not in english for w in words) and not any(w in _MONTHS for w in words)
    return street and not _after_name(text, m.start())


def with_international(text: str, spans: list[Span]) -> list[Span]:
    """``spans`` plus the :data:`INTERNATIONAL` addresses, each grown over what follows it, overlapping ones
    merged into one ADDRESS span."""
    found = [(s.start, s.end) for s in spans]
    if _DIGIT.search(text):
        found += [m.span() for m in INTERNATIONAL.finditer(text) if _plausible(text, m)]
    if not found:
        return spans
    found = sorted((a, _extend(text, b)) for a, b in found)
    merged: list[list[int]] = []
    for a, b in found:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out = []
    for a, b in merged:
        start, end = _snap(text, a, b)
        if start < a and text[a - 2 : a] == "\\n":  # a literal "\n" before it is a line break, not a word
            start = a
        out.append(Span(start, end, KIND))
    return out
