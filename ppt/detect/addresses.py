"""Whole postal addresses as one sensitive span each (kind ``ADDRESS``): building number and street, unit, PO box,
then the town, region and postcode that follow on the same line or the next ones, in US, UK, Canadian, French,
German, Indian, Brazilian and Japanese (romanised and kanji) formats; a postcode of a strong shape also alone.

Pure :mod:`re`, compiled at import (nothing else is imported). How it reads a text:

1. **anchors**, one combined pattern: a street with its building number ("221B Baker Street", "12 rue de la Paix",
   "Hauptstraße 5", "Rua das Flores, 123"), a PO box, an Indian chain of components ending in a road ("Flat 4B, Sai
   Residency, 12th Cross, MG Road"), a romanised Japanese block number or ward ("1-2-3 Shibuya", "Shibuya-ku"), a
   kanji address, or a postcode of a shape that is an address by itself or after a town ("SW1A 1AA", "K1A 0B1",
   "Austin, TX 78701", "Bengaluru 560001", "10115 Berlin", "São Paulo - SP, 01310-100", "〒150-0002");
2. **to the right**, component by component (one anchored match each): a unit, a town, a state or province code, a
   postcode, a country, separated by a comma, a dash or a single line break; a town needs a comma, a dash or a line
   break before it (or a postcode: "75002 Paris"), so the words after an address are not taken; a line reached over
   a line break is kept only when it is all address (or holds a postcode or a region code);
3. **to the left**, the components just before the anchor that are address-like by shape (a unit, a building name,
   something with a number, a street): "Flat 2,", "The Old Rectory, Church Lane,", whole lines above it too.

No part of a sentence is taken: the components are capitalised words, numbers and codes; a lower-case word, "and",
sentence punctuation and ordinary capitalised openers ("Thanks", "Please", "The", weekdays, months) end it. A street
name without a number ("down Main Street") is not marked, nor "Room 12 in Building 4", times, prices, years, phone
numbers or dates. Spans start and end on word boundaries (Latin scripts; kanji addresses have no spaces to snap to).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ppt.detect.address_parts import (
    _ABBR_LOWER,
    _BR_UF,
    _CA_PROV,
    _CJK,
    _DIGIT,
    _JOIN,
    _PC_KW,
    _US_STATE,
    _W,
    CA_PC,
    CA_PC_STRONG,
    CAP,
    CAPW,
    CAPWS,
    CEP,
    COUNTRY,
    DIR,
    JP_CITY,
    JP_NUM,
    JP_PC,
    JP_WARD,
    KANJI,
    KIND,
    LOWER_WORD,
    NAME_WORD,
    NUM,
    ORD,
    PC4,
    PIN,
    POST,
    PREFIXED_PC,
    ROAD_IN,
    STATE,
    TOWN,
    TOWNS,
    TYPE,
    UK_PC,
    UK_PC_STRONG,
    UNIT,
    ZIP,
    _after_name,
    _snap,
    _trie,
)
from ppt.detect.addresses_world import with_international
from ppt.detect.base import Span

VERSION = "2"

# --- anchors -----------------------------------------------------------------------------------------------------

_SP = r"[ \t]+"
# French: "12 rue de la Paix", "5, avenue des Champs-Élysées", "3 bis place Bellecour"
_FR_TYPE = (
    r"(?i:rue|avenue|av\.|bd\.?|boulevard|chemin|ch\.|place|pl\.|allée|allee|impasse|imp\.|quai|cours|route|rte"
    r"|square|passage|voie|faubourg|fg|rond-point|sentier|esplanade|promenade|parvis|cité|hameau|lieu-dit|montée"
    r"|traverse|ruelle|résidence)(?![\w'’-])"
)
_FR_PART = r"(?:de[ \t]+la|de[ \t]+l['’]|de|du|des|d['’]|la|le|les|l['’]|à|au|aux|sur|en|et|sous)"
_FR_WORD = rf"(?:{CAPWS}|\d{{1,2}}(?:er)?(?=[ \t]+{CAP}))"
_FR_GAP = rf"(?:{_SP}|{_SP}?{_FR_PART}(?:{_SP}|(?<=['’])))"
FR = (
    rf"{NUM}(?:[ \t]?(?:bis|ter|quater|[A-D])(?![\w'’]))?,?{_SP}{_FR_TYPE}{_FR_GAP}"
    rf"(?:{_FR_WORD}(?:{_FR_GAP}(?=\w))?){{1,5}}(?<![ \t'’])(?:{_SP}(?:Ouest|Est|Nord|Sud)(?![\w'’-]))?"
)
# German: "Hauptstraße 5", "Karl-Marx-Allee 12a", "Friedrichstr. 123", "Berliner Straße 10"; "Am Markt 3" only with
# the postcode after it
_DE_SUFFIX = r"(?:straße|strasse|str\.|weg|platz|allee|gasse|damm|ufer|chaussee|steig|pfad|markt)"
_DE_WORD = r"(?:Straße|Strasse|Str\.|Weg|Platz|Allee|Gasse|Damm|Ufer|Ring|Markt|Chaussee|Steig|Pfad)"
DE_NUM = r"\d{1,4}(?:[ \t]?[a-zA-Z](?![\w'’]))?(?:[ \t]?[-/][ \t]?\d{1,4}[a-z]?)?(?![\w'’])(?![.,:]\d)"
DE = (
    rf"(?<![\w'’-])(?:{CAP}[^\W\d_]*?{_DE_SUFFIX}|(?:{CAP}{_W}*-)+{_DE_WORD}|{CAP}{_W}*(?:er|e|en){_SP}{_DE_WORD})"
    rf"[ \t]*{DE_NUM}"
)
_DE_PREP = r"(?:Am|An[ \t]der|An[ \t]den|Auf[ \t]dem|Auf[ \t]der|Im|In[ \t]der|In[ \t]den|Unter[ \t]den|Zum|Zur|Alt)"
DE_PREP = (
    rf"(?<![\w'’-]){_DE_PREP}[ \t-]{CAPW}{_SP}{DE_NUM}"
    rf"(?=[ \t]*,?[ \t]*(?:\r?\n)?[ \t]*(?:D-)?\d{{5}}{_SP}{CAP})"
)
# Brazilian: "Rua das Flores, 123", "Av. Paulista, 1578", "Alameda Santos 2000"
_BR_TYPE = (
    r"(?:Rua|Avenida|Av\.|Travessa|Tv\.|Trav\.|Alameda|Al\.|Praça|Pça\.?|Estrada|Estr\.|Rodovia|Rod\.|Largo"
    r"|Ladeira|Viela|Beco)"
)
_BR_WORD = (
    rf"(?:{CAPWS}|(?:Dr|Dra|Prof|Profa|Pres|Gen|Sen|Dep|Eng|Cel|Mal|Min|Cap|Ten|Pe|Sta|Sto|Sr|Sra|Dom|Frei)\."
    rf"|\d{{1,2}}(?={_SP}de{_SP}{CAP}))"
)
_BR_PART = r"(?:da|das|do|dos|de|e|d['’])"
BR = (
    rf"(?<![\w'’.-]){_BR_TYPE}{_SP}(?:(?:{_BR_PART}{_SP})*{_BR_WORD}(?:{_SP}(?=\w))?){{1,6}}(?<![ \t])"
    r"(?:[ \t]*,[ \t]*|[ \t]+)(?:n[º°o]\.?[ \t]*|(?i:no\.)[ \t]*)?"
    r"(?:\d{1,5}[A-Za-z]?(?![\w'’])(?![.,:/]\d)|[sS]/[nN](?![\w'’]))"
)
# US, UK, Canada, India, anywhere English: "221B Baker Street", "1600 Pennsylvania Avenue NW", "350 5th Ave"
STREET = (
    rf"{NUM}(?:[ \t]*,)?{_SP}(?:(?:{DIR}{_SP})?(?:{NAME_WORD}{_SP}){{1,4}}{TYPE}(?:\.?{_SP}{DIR}(?![\w'’-]))?"
    r"|(?:Broadway|Kingsway|Queensway|Strand|Haymarket|Piccadilly|Bowery)(?![\w'’-]))"  # a street without a type
)
# typed in lower case: an abbreviated type ("55 elm st"), or a whole word after "at", "to"... ("at 9 oak road")
_AT = "".join(f"|(?<=\\b{w} )" for w in ("at", "to", "on", "is", "from", "in", "near"))[1:]
_LOWER_NAME = rf"(?!(?:19|20)\d\d(?!\d)){NUM}{_SP}{LOWER_WORD}(?:{_SP}{LOWER_WORD})?{_SP}"
STREET_LOWER = (
    rf"(?:{_LOWER_NAME}{_trie(_ABBR_LOWER)}|(?:{_AT}){_LOWER_NAME}(?:street|road|avenue|boulevard|lane|drive))"
    r"(?![\w'’-])"
)
HIGHWAY = (
    rf"{NUM}{_SP}(?:(?:State|US|U\.S\.|County|Interstate|Farm[ \t]to[ \t]Market){_SP})?"
    r"(?:Highway|Hwy\.?|Route|Rte\.?|Road|Rd\.?)[ \t]+\d{1,4}[A-Z]?(?![\w'’-])"
)
PO_BOX = (
    r"(?<![\w'’.-])(?i:p\.?[ \t]?o\.?[ \t]?box|post[ \t]office[ \t]box|gpo[ \t]box|postfach|caixa[ \t]postal"
    r"|bo[iî]te[ \t]postale|private[ \t]bag)[ \t]*[#:]?[ \t]*(?:(?i:no)\.?[ \t]*)?\d{1,7}(?![\w'’-])"
)
# Indian chain: a unit or number, components, ending in a road or locality: "Flat 4B, Sai Residency, 12th Cross"
_IN_TOKEN = rf"(?:{CAPWS}|{ORD}|\d{{1,4}}[A-Z]?(?![\w'’])|No\.)"
_IN_COMP = rf"(?:{_IN_TOKEN}[ \t]*){{1,5}}"
_IN_ROAD = rf"(?:{_IN_TOKEN}{_SP}){{1,4}}{ROAD_IN}(?![ \t]+(?:{CAP}|\d))"  # a whole component
_IN_START = (
    rf"(?:(?<![\w'’.-]){UNIT}|(?<![\w'’.#-])#[ \t]?\d[\w/-]*|(?<![\w'’.-])(?:No\.|Nº)[ \t]?\d[\w/-]*"
    rf"|(?<![\w'’.-])[A-Z]{{1,2}}-\d{{1,4}}[A-Z]?(?![\w'’-])|(?!(?:19|20)\d\d(?!\d)){NUM})"
)
INDIA = rf"{_IN_START}(?:[ \t]*,[ \t]*{_IN_COMP}){{0,6}}[ \t]*,[ \t]*{_IN_ROAD}"
JP_BLOCK = (
    rf"(?:(?<![\w'’-]){CAPWS}{_SP})?{JP_NUM}(?:{_SP}{CAP}[a-z]+(?:-[a-z]+)?){{0,2}}"
    rf"(?=[ \t]*,[ \t]*(?:{JP_WARD}|{JP_CITY}|{CAP}[a-z]+[ \t]*,[ \t]*(?:{JP_WARD}|{JP_CITY})))"
)
JP_WARD_ANCHOR = rf"(?<![\w'’-]){JP_WARD}"

# postcodes that are an address alone, or after a town
_LSEP = r"(?:[ \t]*,[ \t]*|[ \t]+[-–][ \t]+|[ \t]*[-–][ \t]*(?=\d)|[ \t]+)"
_CODE = (
    rf"(?:{_US_STATE}{_SP}{ZIP}|(?:{_CA_PROV}{_LSEP})?{CA_PC_STRONG}|{UK_PC_STRONG}"
    rf"|{_BR_UF}{_LSEP}(?:CEP:?[ \t]*)?{CEP})"
)
LONE_CODE = _CODE  # "SW1A 1AA", "ON K1A 0B1", "TX 78701", "SP, 01310-100"
LONE_TOWN = rf"{TOWNS}{_LSEP}(?:{_CODE}|{PIN}|(?:CEP:?[ \t]*)?{CEP})"  # the same after a town, and "Bengaluru 560001"
# what "20000 Euros" counts is not a town
_COUNTED = (
    r"(?:Euros?|EUR|Dollars?|USD|Pounds?|GBP|Francs?|Yen|Rupees?|Reais|Real|People|Persons?|Users?|Members?|Points?"
    r"|Miles?|Votes?|Views?|Downloads?|Followers?|Units?|Copies|Pieces?|Steps?|Calories|Words?|Pages?|Items?|Tons?)"
    r"(?![\w'’-])"
)
LONE_EU = (
    r"(?:^|(?<=,[ \t])|(?<=,)|(?<=\bin )|(?<=\bto )|(?<=\bà )|(?<=\bzu )|(?<=\bnach )|(?<=\baus )|(?<=\bde ))"
    rf"(?:(?:D|F|DE|FR)-)?\d{{5}}{_SP}(?!{_COUNTED}){TOWN}"
)
LONE_JP = rf"(?:(?<![\w'’-])(?:{JP_WARD}|{JP_CITY})[ \t]*,?[ \t]*{JP_PC}|〒[ \t]?\d{{3}}[-－]?\d{{4}})"

# (name, the characters it can start with, pattern), tried in this order at each word's start
ANCHORS = (
    ("india", r"[A-Z\d#][^,\n]{0,30},", INDIA),  # a comma soon: the quick test of a chain
    ("street", r"\d", STREET),
    ("highway", r"\d", HIGHWAY),
    ("fr", r"\d", FR),
    ("br", "[RATPELVB]", BR),
    ("de", CAP, DE),
    ("de_prep", "[AIUZ]", DE_PREP),
    ("street_lower", r"\d", STREET_LOWER),
    ("po_box", "[PpGgCcBb]", PO_BOX),
    ("jp_block", r"[\dA-Z]", JP_BLOCK),
    ("jp_ward", "[A-Z]", JP_WARD_ANCHOR),
    ("lone_jp", "[A-Z〒]", LONE_JP),
    ("lone_town", CAP, LONE_TOWN),
    ("lone_code", "[A-Z(]", LONE_CODE),
    ("lone_eu", r"(?:[A-Z]{1,2}-)?\d{5}[ \t]", LONE_EU),
)
# every anchor but a kanji address starts a word: one look-behind skips the positions inside words, one
# look-ahead at the first character skips the anchors that cannot start there (a kanji address is searched only
# in a text with kanji)
_LATIN = "(?<![\\w'’-])(?:" + "|".join(f"(?={first})(?P<{name}>{rx})" for name, first, rx in ANCHORS) + ")"
_ANCHOR = re.compile(_LATIN, re.M)
_KANJI_ANCHOR = re.compile(KANJI)
# a postcode named as one ("ZIP 02101", "PIN: 560001", "CEP 01310-100"): the code alone
_KEYWORD_PC = re.compile(rf"(?<![\w'’-]){_PC_KW}(?P<pc>{UK_PC}|{CA_PC}|{CEP}|{ZIP}|{PIN}|{JP_PC}|{PREFIXED_PC})")

# --- to the right ------------------------------------------------------------------------------------------------

# a US address typed in lower case: "boston ma 02115"
LOWER_TOWN_STATE_ZIP = rf"[a-z]+(?:[ \t][a-z]+){{0,2}}[ \t]*,?[ \t]*(?i:{_US_STATE})[ \t]+{ZIP}"
_TAIL_SEP = (
    r"(?P<sep>[ \t]*[,.;]?[ \t]*\r?\n[ \t]*(?=\S)|\.?[ \t]*,[ \t]*|[ \t]+[-–—][ \t]+|[ \t]*[-–][ \t]*(?=\d)|[ \t]+)"
)
_TAIL = re.compile(
    rf"{_TAIL_SEP}(?:(?P<post>{POST})|(?P<state>{STATE})|(?P<unit>{UNIT})|(?P<jp_ward>{JP_WARD})"
    rf"|(?P<jp_num>{JP_NUM})|(?P<paren>\({CAP}[^()\n]{{1,30}}\))|(?P<country>{COUNTRY})|(?P<town>{TOWN})"
    rf"|(?P<lower>{LOWER_TOWN_STATE_ZIP}))"
)
_COMPONENTS = ("post", "state", "unit", "jp_ward", "jp_num", "paren", "country", "town", "lower")
_STRONG = frozenset({"post", "state", "unit", "jp_num", "country", "paren", "lower"})
_LINE_REST = re.compile(r"[ \t]*[,.;:]?[ \t]*(?:\r?\n|$)")
_JP_PC = re.compile(JP_PC)
_PC4 = re.compile(PC4)
_FOLLOWS_TOWN = re.compile(rf"[ \t]+{TOWN}")
_JP_CITY = re.compile(JP_CITY)
_ENDS_IN_STATE = re.compile(rf"[ \t]{STATE}\Z")
MAX_COMPONENTS = 12
MAX_LINES = 5

# --- to the left -------------------------------------------------------------------------------------------------

_BUILDING = (
    "Residency Residence Apartments Apartment Apts Towers Tower Building Bldg House Court Mansions Mansion Heights"
    " Villas Villa Enclave Complex Plaza Centre Center Chambers Cottage Cottages Farm Lodge Manor Rectory Vicarage"
    " Barn Mill Hall Estate Park Gardens Block Wing Annexe Arcade Square Hostel Society CHS Niwas Nivas Sadan Bhavan"
    " Bhawan Kunj Edifício Edificio Condomínio Résidence Immeuble Haus Hof"
).split()
BUILDING = (
    rf"(?:{CAPWS}{_SP}){{0,3}}(?:{'|'.join(sorted(_BUILDING, key=len, reverse=True))})(?:{_SP}(?:[A-Z]|\d{{1,4}}))?"
)
# not a phone number's or a date's last part ("555 1234, ", "12 March 2024, ")
_DIG_TOKEN = (
    rf"(?:{ORD}|(?<!\d[ \t])(?!\d{{3}}-\d{{4}}|(?:19|20)\d\d(?![\w/-]))"
    r"[A-Z]{0,2}-?\d{1,5}[A-Z]?(?:[/-]\d{1,4}[A-Z]?)?)(?![\w'’/-])"
)
DIGITS = rf"(?:(?:{CAPWS}|No\.){_SP}){{0,3}}{_DIG_TOKEN}(?:{_SP}{CAPWS}){{0,3}}"
STREET_NAME = rf"(?:(?:{NUM}|{ORD}){_SP})?(?:{NAME_WORD}{_SP}){{1,3}}(?:{TYPE}|{ROAD_IN})"
LCOMP = rf"(?<![\w'’.-])(?:{UNIT}|{STREET_NAME}|{BUILDING}|{DIGITS})(?![\w'’-])"
# components, each followed by a comma or a line break, up to the anchor (a line above it is taken whole: see _left)
_LEFT = re.compile(rf"(?:{LCOMP}(?:[ \t]*,[ \t]*(?:\r?\n[ \t]*)?|[ \t]*\r?\n[ \t]*))*\Z")
LEFT_WINDOW = 240

# names with a street type that are not streets, or famous ones named more often than written to
_NOT_A_STREET = re.compile(
    r"\b(?:Google|Hard|Disk|Flash|Test|Wall|Sesame|Memory|Fast|Abbey|Silk|Milky|Easy|Coronation|Jump|Brick|Sunset)"
    r"[ \t]+(?:Drive|Street|Lane|Road|Way|Boulevard|Blvd)\Z"
)
_NUMBER_FIRST = frozenset({"street", "street_lower", "highway", "fr"})


class AddressDetector:
    """Postal addresses, each one :class:`~ppt.detect.base.Span` of kind ``ADDRESS`` (see the module's doc)."""

    signature = f"addresses:{VERSION}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        return [with_international(text, self._one(text)) for text in texts]

    def _one(self, text: str) -> list[Span]:
        if not _DIGIT.search(text):  # every address format here has a digit
            return []
        spans: list[Span] = []
        floor = 0  # nothing before it: the previous span ends there
        pos = 0
        kanji = _KANJI_ANCHOR if _CJK.search(text) else None
        while m := _next_anchor(text, pos, kanji):
            kind = m.lastgroup or "kanji"
            start, end = m.span()
            if kind in _NUMBER_FIRST and _after_name(text, start):  # "Apollo 11 Moon Walk": a name's number
                pos = start + 1
                continue
            jp = kind in ("kanji", "jp_block", "jp_ward", "lone_jp")
            end = _right(text, end, jp)
            if kind == "street" and end == m.end() and _NOT_A_STREET.search(text, start, end):
                pos = start + 1  # "2 Google Drive accounts", "3 Wall Street analysts", with nothing after
                continue
            start = _left(text, start, floor)
            if kind == "jp_ward" and not _DIGIT.search(text, start, end):  # a ward alone is a place, not an address
                pos = m.end()
                continue
            start, end = _snap(text, start, end)
            spans.append(Span(start, end, KIND))
            floor = pos = max(end, m.end())
        for m in _KEYWORD_PC.finditer(text):
            s, e = m.span("pc")
            if not any(sp.start <= s < sp.end for sp in spans):
                spans.append(Span(s, e, KIND))
        return _joined(text, sorted(spans, key=lambda s: s.start))


def _next_anchor(text: str, pos: int, kanji: re.Pattern | None) -> re.Match | None:
    """The first anchor at or after ``pos``: a Latin one, or a kanji address in a text with kanji."""
    m = _ANCHOR.search(text, pos)
    k = kanji.search(text, pos) if kanji else None
    return k if k and (not m or k.start() < m.start()) else m


def _joined(text: str, spans: list[Span]) -> list[Span]:
    """Spans only a comma, a dash or a line break apart joined: parts of one address found apart."""
    out: list[Span] = []
    for s in spans:
        if out and (s.start <= out[-1].end or _JOIN.fullmatch(text, out[-1].end, s.start)):
            out[-1] = Span(out[-1].start, max(out[-1].end, s.end), KIND)
        else:
            out.append(s)
    return out


def _right(text: str, end: int, jp: bool) -> int:
    """``end`` moved over the components that follow it (see the module's doc)."""
    pos = accepted = end
    prev, last = "core", ""
    lines = 0
    line_strong = False  # the line reached over a break has a postcode, a region, a unit or a country
    for _ in range(MAX_COMPONENTS):
        m = _TAIL.match(text, pos)
        if not m:
            break
        comp = next(c for c in _COMPONENTS if m.group(c) is not None)
        sep, value = m.group("sep"), m.group(comp)
        newline = "\n" in sep
        if comp == "town":
            if not (newline or prev == "post" or any(c in sep for c in ",-–—")):
                break  # a town after a space only after its postcode ("75002 Paris")
            jp = jp or bool(_JP_CITY.fullmatch(value))
        elif comp == "post":
            if _JP_PC.fullmatch(value) and not jp:
                break
            after_state = prev == "state" or (prev == "town" and _ENDS_IN_STATE.search(last))  # "Sydney NSW 2000"
            if _PC4.fullmatch(value) and not after_state and not _FOLLOWS_TOWN.match(text, m.end()):
                break
        elif comp == "jp_num" and not jp:
            break
        elif comp == "jp_ward":
            jp = True
        elif comp == "paren" and newline:
            break
        if newline:
            if lines == MAX_LINES:
                break
            accepted = pos  # the line before the break is all address
            lines += 1
            line_strong = False
        line_strong = line_strong or comp in _STRONG
        pos = m.end()
        prev, last = comp, value
        if not lines:
            accepted = pos
    if lines and (line_strong or _LINE_REST.match(text, pos)):
        accepted = pos  # the last line: all address, or it has a postcode
    return accepted


def _left(text: str, start: int, floor: int) -> int:
    """``start`` moved back over the address-like components just before it."""
    lo = max(floor, start - LEFT_WINDOW)
    m = _LEFT.search(text, lo, start)
    if not m or m.start() == start:
        return start
    new = m.start()
    line_start = text.rfind("\n", 0, new) + 1
    if text[line_start:new].strip() and "\n" in text[new:start]:  # a line above that is not all address
        new = text.index("\n", new) + 1
        while text[new] in " \t":
            new += 1
    return new
