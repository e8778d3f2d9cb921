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

from ppt.detect.base import Span

KIND = "ADDRESS"
VERSION = "2"

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


class AddressDetector:
    """Postal addresses, each one :class:`~ppt.detect.base.Span` of kind ``ADDRESS`` (see the module's doc)."""

    signature = f"addresses:{VERSION}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        return [_with_international(text, self._one(text)) for text in texts]

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


def _with_international(text: str, spans: list[Span]) -> list[Span]:
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
