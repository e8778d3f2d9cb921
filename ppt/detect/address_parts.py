"""Building blocks of the postal-address detector (:mod:`ppt.detect.addresses`): letters, words, street
types, unit words, postcodes of many countries, states, towns, Japanese blocks, and the word-boundary helpers its
passes share."""

from __future__ import annotations

import re
from collections.abc import Sequence

KIND = "ADDRESS"

# --- building blocks ---------------------------------------------------------------------------------------------

_UPPER = "".join(c for c in map(chr, range(0xC0, 0x250)) if c.isupper())
CAP = f"[A-Z{_UPPER}]"  # an upper-case Latin letter
_W = r"[\w'’]"
CAPW = rf"{CAP}{_W}*(?:-{_W}+)*"  # a capitalised word: "Queen's", "Saint-Denis", "MG"
ORD = r"\d{1,3}(?:st|nd|rd|th)(?![\w'’])"

# capitalised words that open a clause or name a date or a record, never a street or a town
STOP = (
    "I We You He She They It The This That These Those There Here My Our Your His Her Their Its A An And But Or So"
    " Then If When While Where What Which Who Why How Is Are Was Were Be Been Do Does Did Has Have Had Not No Yes"
    " Also However Please Thanks Thank Regards Best Cheers Sincerely Kind Warm Yours Dear Hi Hello Hey Call Email"
    " Mail Phone Tel Mobile Fax Contact Send Ship Deliver Visit Meet See Note PS In At On To For From With By Of As"
    " After Before Since Until Near Next Last Every Each All Some Any Top Today Tomorrow Yesterday Tonight Monday"
    " Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August September"
    " October November December Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec Mr Mrs Ms Miss Dr Prof Sir"
    " Order Invoice Ticket Account Case Ref Reference ID Number Code Room Flight Train Bus Policy Claim Member"
    " Customer Employee Patient Page Chapter Section Version Item Model Part Serial Batch Lot Total Price Cost Amount"
    " Balance Payment Year Years Day Days Week Weeks Month Months Hour Hours Minute Minutes Times Steps Step Ways"
    " Things"
    " Tips Reasons Level Exit Platform Episode Season Volume Vol Issue Grade Class Score Team Game Games Apt Suite Unit"
    " Flat Floor Box PO Zip ZIP Postcode PIN CEP"
).split()


def _trie(words: Sequence[str]) -> str:
    """A regular expression matching exactly ``words``, written as a trie (a few tests per character instead
    of one per word: the stop words are checked at every capitalised word)."""
    tree: dict = {}
    for w in words:
        node = tree
        for c in w:
            node = node.setdefault(c, {})
        node[""] = {}

    def walk(node: dict) -> str:
        ends = "" in node
        branches = [re.escape(c) + walk(child) for c, child in sorted(node.items()) if c]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{body})?" if ends else body

    return walk(tree)


_STOP = rf"(?={CAP})(?!{_trie(sorted(set(STOP)))}(?![\w'’-]))"
CAPWS = rf"{_STOP}{CAPW}"  # a capitalised word that can be part of a name of a place
_L = r"[^\W\d_]"
CAPL = rf"{_STOP}{CAP}{_L}*(?:['’]{_L}+)*(?:-{_L}+(?:['’]{_L}+)*)*"  # the same without digits: "King's", "MG"

# street types written after the street's name (English); the short ones take an optional period
_TYPES_EN = (
    "Street St Road Rd Avenue Ave Av Boulevard Blvd Lane Ln Drive Dr Court Ct Place Pl Way Terrace Terr Ter Close Cl"
    " Crescent Cres Highway Hwy Parkway Pkwy Pky Square Sq Circle Cir Trail Trl Alley Aly Row Mews Grove Gr Gardens"
    " Gdns Garden Walk Hill Green Park Rise Vale View Parade Pde Wharf Yard Gate Quay Loop Run Pike Path Plaza Plz"
    " Point Pt Crossing Xing Cove Ridge Heights Hts Expressway Expy Freeway Fwy Turnpike Tpke Embankment Causeway"
    " Esplanade Promenade Broadway Bypass Circus Chase Drove Fold Hollow Meadow Meadows Mall Pass Spur Strand"
    " Manor Wynd Brae"
).split()
_TYPES_LOWER = "street st road rd avenue ave blvd boulevard ln hwy pkwy ct pl dr cir ter sq".split()
TYPE = rf"{_trie(sorted({*_TYPES_EN, *(t.upper() for t in _TYPES_EN), *_TYPES_LOWER}))}(?![\w'’-])"
_ABBR_LOWER = "st rd ave blvd ln hwy pkwy ct pl dr cir ter sq".split()
DIR = r"(?:N|S|E|W|NE|NW|SE|SW|N\.E\.|N\.W\.|S\.E\.|S\.W\.|North|South|East|West)(?![\w'’-])\.?"
# Indian road and locality words that end a component of an address ("12th Cross", "MG Road", "Lajpat Nagar")
_ROAD_IN = (
    "Road Rd Street St Marg Cross Main Nagar Layout Colony Sector Phase Block Vihar Enclave Extension Extn Gali Chowk"
    " Bazaar Bazar Salai Peth Wadi Puram Pura Halli Palya Ganj Bagh Hills Lane Avenue Circle Park Garden Gardens"
).split()
ROAD_IN = rf"{_trie(sorted(set(_ROAD_IN)))}(?![\w'’-])"

# a building number: not part of a decimal, a time, a price, a fraction or a code; a year after "in"/"since" is a year
_YEAR_AFTER = "".join(
    rf"(?<!\b{w} )" for w in ("in", "In", "since", "Since", "until", "by", "of", "from", "to", "year", "Year")
)
NUM = (
    rf"(?=\d)(?<![\w$€£¥₹.,:/#+*%'’-])(?:(?!(?:19|20)\d\d(?!\d))|{_YEAR_AFTER})"
    r"\d{1,6}[A-Za-z]?(?:[-/–]\d{1,5}[A-Za-z]?)?(?![\w'’])(?![.,:/]\d)"
)
NAME_WORD = rf"(?:{CAPL}|{ORD}|(?:St|Mt|Ft)\.)"
_LOWER_STOP = (
    "the a an of on in at to down up along across over into onto this that my our your his her their its and or but"
    " more new old other few many miles mile km kilometres kilometers metres meters feet foot yards blocks block"
    " minutes minute hours hour times steps step years year days day weeks people cars lane lanes way ways main"
    " dirt back side one two three four five six seven eight nine ten hard"
).split()
LOWER_WORD = rf"(?:(?!{_trie(sorted(set(_LOWER_STOP)))}(?![\w'’]))[a-z][a-z'’]+|{ORD})"

# units: "Apt 4B", "Suite 700", "Flat 3", "#12", "3rd Floor", "Bât. B", "apto 42", "House No. 221"
_UNIT_WORDS = (
    "apartment apt appt appartement suite ste unit flat floor fl room rm building bldg block blk tower wing house"
    " plot door shop office villa quarter qtr bâtiment batiment bât bat étage etage escalier esc porte apto ap"
    " apartamento sala conjunto conj bloco casa loja andar wohnung whg"
).split()
UNIT_KW = rf"(?i:{_trie(sorted(set(_UNIT_WORDS)))})(?![\w'’])"
_UNIT_VALUE = r"(?:[A-Za-z]{0,2}-?\d[\w/-]*|[A-Z](?![\w'’]))"
UNIT = (
    rf"(?:(?:{UNIT_KW}|H\.?[ \t]?No|D\.?[ \t]?No)\.?[ \t]*(?:(?i:no)\.?[ \t]*|n[º°o]\.?[ \t]*)?#?[ \t]*{_UNIT_VALUE}"
    r"|\d{1,3}(?:st|nd|rd|th|e|er|ème|º|°)?[ \t]+(?:Floor|floor|FLOOR|Fl\.|étage|Étage|Etage|Stock|OG|andar)"
    r"(?![\w'’])|#[ \t]?\d[\w/-]*)"
)

# postcodes
_UK_OUT = r"(?:[A-PR-UWYZ](?:\d[A-HJKPSTUW\d]?|[A-HK-Y]\d[ABEHMNPRV-Y\d]?)|GIR)"
_UK_IN = r"\d[ABD-HJLNP-UW-Z]{2}"
UK_PC = rf"(?<![\w-]){_UK_OUT}[ \t]?{_UK_IN}(?![\w'’-])"
# alone, only as written with its space, and not a size ("MP3 4GB")
UK_PC_STRONG = rf"(?<![\w-])(?=[A-Z])(?!\w+[ \t]\d(?:GB|MB|KB|TB|HP|HD|AM|PM)(?!\w)){_UK_OUT}[ \t]{_UK_IN}(?![\w'’-])"
_CA_L = "[ABCEGHJ-NPRSTV-Z]"
CA_PC = rf"(?<![\w-])[ABCEGHJ-NPRSTVXY]\d{_CA_L}[ \t]?\d{_CA_L}\d(?![\w'’-])"
CA_PC_STRONG = rf"(?<![\w-])[ABCEGHJ-NPRSTVXY]\d{_CA_L}[ \t]\d{_CA_L}\d(?![\w'’-])"
ZIP = r"(?<![\w-])\d{5}(?:-\d{4})?(?![\w-])(?![.,]\d)"
CEP = r"(?<![\w.-])(?:\d{5}|\d{2}\.\d{3})-\d{3}(?![\w-])"
PIN = r"(?<![\w-])[1-9]\d{2}[ \t]?\d{3}(?![\w-])(?![.,]\d)(?![ \t]\d)"
JP_PC = r"(?<![\w-])\d{3}-\d{4}(?![\w-])"
PC4 = r"(?<![\w-])\d{4}(?![\w-])(?![.,:]\d)"
PREFIXED_PC = r"(?<![\w-])(?:D|F|DE|FR|CH|A)-\d{4,5}(?![\w-])"
_PC_KW = (
    r"(?i:zip(?:[ \t]?code)?|post(?:al)?[ \t]?code|pin(?:[ \t]?code)?|cep|plz|code[ \t]postal)"
    r"(?![\w'’])[ \t]*(?:(?i:is|é|ist|est)[ \t]+)?[:#-]?[ \t]*"
)
POST = rf"(?:{_PC_KW})?(?:{UK_PC}|{CA_PC}|{CEP}|{ZIP}|{PIN}|{JP_PC}|{PREFIXED_PC}|{PC4})"

_US = (
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK"
    " OR PA PR RI SC SD TN TX UT VT VA WA WV WI WY GU VI"
).split()
_CA = "AB BC MB NB NL NS NT NU ON PE QC SK YT".split()
_BR = "AC AL AP AM BA CE DF ES GO MA MT MS MG PA PB PR PE PI RJ RN RS RO RR SC SP SE TO".split()
_AU = "NSW VIC QLD SA WA TAS NT ACT".split()
# a region code, not the first word of a name ("MG Road")
STATE = rf"(?:{_trie(sorted({*_US, *_CA, *_BR, *_AU}))}|D\.C\.)(?![\w'’-])(?![ \t]+[A-Z][a-z])"
_US_STATE = rf"(?:{_trie(_US)})(?![\w'’-])"
_CA_PROV = rf"(?:{'|'.join(_CA)}|\((?:Québec|Quebec|QC|Ontario)\))(?![\w'’-])"
_BR_UF = rf"(?:{_trie(_BR)})(?![\w'’-])"
COUNTRY = r"(?:U\.S\.A\.|U\.S\.|U\.K\.)"

# a town: up to four capitalised words, with the particles of place names ("Rio de Janeiro", "Frankfurt am Main")
_TPART = r"(?:de|da|do|das|dos|del|di|du|des|la|le|les|am|an|im|upon|on|sur|en|der|den|dem|von|van|of)"
TOWN_WORD = rf"(?:{CAPL}|(?:St|Ste|Mt|Ft)\.(?=[ \t]+{CAP}))"
# (each pattern written once, its separator taken only before another word: the patterns stay small to compile)
TOWN = (
    rf"(?:{TOWN_WORD}(?:[ \t]+(?:{_TPART}[ \t]+)?(?={CAP}))?){{1,4}}(?<![ \t])"
    r"(?:[ \t]+CEDEX(?:[ \t]+\d{1,2})?)?(?![\w'’-])"
)
TOWNS = rf"(?:{TOWN}(?:[ \t]*,[ \t]*(?:\r?\n[ \t]*)?(?={CAP}))?){{1,4}}(?<![ \t,\n])"  # "Banjara Hills, Hyderabad"

# Japan, romanised
_JP_CITIES = (
    "Tokyo Osaka Kyoto Yokohama Nagoya Sapporo Kobe Fukuoka Kawasaki Saitama Hiroshima Sendai Chiba Kitakyushu"
    " Sakai Niigata Hamamatsu Kumamoto Okayama Shizuoka Nara Naha Kanazawa Nagasaki Kagoshima Hokkaido Okinawa"
    " Kanagawa Hyogo Aichi Japan"
).split()
JP_CITY = rf"(?:{'|'.join(_JP_CITIES)})(?:-(?:to|fu|shi|ken))?(?![\w'’-])"
JP_WARD = rf"(?:{CAP}[a-z]{{2,}}-(?:ku|shi|cho|machi|gun|ken|mura)|Tokyo-to|(?:Osaka|Kyoto)-fu)(?![\w'’-])"
JP_NUM = r"(?<![\w.-])\d{1,4}(?:-chome(?:-|[ \t]+)\d{1,4}(?:-\d{1,4}){0,2}|(?:-\d{1,4}){1,3})(?![\w'’-])(?![.,]\d)"

# Japan, kanji: 〒, prefecture, city or ward, then blocks ending on a number (丁目, 番地, 号, 1-2-3)
_KANJI = r"\u4e00-\u9fff々〆"
_KATA = r"\u30a0-\u30ffｦ-ﾟ"
_KTEXT = rf"[{_KANJI}{_KATA}ーのヶケ]{{0,15}}"  # the words between two numbers (bounded: no runaway backtracking)
_KNUM = r"(?:[0-9０-９]+|[一二三四五六七八九十百]+(?=丁目|番|号))"
KANJI = (
    r"(?:〒[ \t]?[0-9０-９]{3}[-－]?[0-9０-９]{4}[ \t\u3000]*)?"
    rf"(?:東京都|北海道|大阪府|京都府|[{_KANJI}]{{2,3}}県)?[{_KANJI}{_KATA}]{{1,5}}?[市区町村郡]"
    rf"(?:{_KTEXT}{_KNUM}(?:丁目|番地|番|号|条|[-－‐−の]))*{_KTEXT}{_KNUM}(?:丁目|番地|番|号|階)?"
    rf"(?:[ \t\u3000]+[^\s、。，,]{{1,20}}?[0-9０-９]+(?:階|F|号室))?"
)

_PREV_WORD = re.compile(r"(?<![\w'’.-])([^\W\d_][\w'’-]*)[ \t]+\Z")
# the words after which a number is a count, a record's or a unit's number ("Flat 201, Green Park Apartments"),
# not a building's
_NOT_BEFORE_NUMBER = frozenset(
    "the a an these those my our your his her their its whose every each about around over under only just all top"
    " first last some any another other"
    " section chapter room page version exit gate platform level episode season volume vol part step item figure fig"
    " table rule article clause grade class number route highway interstate bus train flight line track channel"
    " model type size lot batch slide question verse act scene stage phase round week day year apollo windows"
    " iphone android ios python flat apt apartment suite ste unit floor office plot door shop block building bldg"
    " tower wing".split()
)
# capitalised words after which a number still is a building's
_OPENERS = frozenset(
    "At To In On Near Via From Of And Or By Opposite Behind Beside Visit Address Is Ship Send Deliver Mail Post"
    " Find Meet Contact Apt Flat Suite Unit No Nº Number".split()
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n\"“(\[])[ \t]*\Z")
_JOIN = re.compile(r"[ \t]*[,\-–]?[ \t]*(?:\r?\n[ \t]*)?")
_DIGIT = re.compile(r"\d|〒")
_WORD = re.compile(r"[^\W_]")
_CJK = re.compile(rf"[{_KANJI}{_KATA}\u3040-\u309f]")


def _after_name(text: str, start: int) -> bool:
    """Whether the number at ``start`` is not a building number by the word before it: a determiner or a record's
    word ("the 5 Way Street festival", "Section 8", "Room 12"), or a capitalised word inside a sentence ("Apollo 11
    Moon Walk", "Windows 11"); "at 12", "Visit 12" at a sentence's start and "Smith, 12" are building numbers."""
    m = _PREV_WORD.search(text, max(0, start - 60), start)
    if not m:
        return False
    word = m.group(1)
    if word.lower() in _NOT_BEFORE_NUMBER:
        return True
    if not word[0].isupper() or word in _OPENERS:
        return False
    return not _SENTENCE_START.search(text, max(0, m.start() - 20), m.start())


def _snap(text: str, start: int, end: int) -> tuple[int, int]:
    """The span grown to whole words (not in kanji, which has no spaces to snap to), trimmed of white space."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    while start > 0 and _in_word(text, start):
        start -= 1
    while end < len(text) and _in_word(text, end):
        end += 1
    return start, end


def _in_word(text: str, i: int) -> bool:
    a, b = text[i - 1], text[i]
    return bool(_WORD.match(a) and _WORD.match(b) and not _CJK.match(a) and not _CJK.match(b))
