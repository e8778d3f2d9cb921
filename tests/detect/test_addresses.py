"""The postal-address detector: each address, inline or as a block of lines, is one span of kind ADDRESS that
covers exactly the address, in every format it reads; ordinary sentences with numbers and street-like words give
none; spans never start or end inside a word; importing it loads no NLP library."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ppt.detect.addresses import AddressDetector
from ppt.detect.base import Span

DETECTOR = AddressDetector()


def found(text: str) -> list[str]:
    [spans] = DETECTOR.detect([text])
    assert all(isinstance(s, Span) and s.kind == "ADDRESS" for s in spans)
    return [text[s.start : s.end] for s in spans]


# (format, text, the one address in it)
ADDRESSES = [
    # United States
    (
        "us",
        "Please ship it to 742 Evergreen Terrace, Springfield, OR 97403 by Friday.",
        "742 Evergreen Terrace, Springfield, OR 97403",
    ),
    (
        "us",
        "The gala is at 1600 Pennsylvania Avenue NW, Washington, DC 20500-0003 and starts at seven.",
        "1600 Pennsylvania Avenue NW, Washington, DC 20500-0003",
    ),
    (
        "us",
        "Send the forms to:\n48 Maple Grove Rd\nApt 3C\nBurlington, VT 05401\nThanks!",
        "48 Maple Grove Rd\nApt 3C\nBurlington, VT 05401",
    ),
    (
        "us",
        "Her apartment, 33 W 42nd St Apt 5B, New York, NY 10036, is tiny.",
        "33 W 42nd St Apt 5B, New York, NY 10036",
    ),
    ("us", "The refund cheque went to PO Box 4471, Tulsa, OK 74101.", "PO Box 4471, Tulsa, OK 74101"),
    ("us", "my address is 55 elm st, boston ma 02115", "55 elm st, boston ma 02115"),
    (
        "us",
        "Customer: Jane Roe\n1200 Oak Lane, Unit 5\nAustin, TX 78701-1234\nPhone: 512 555 0100",
        "1200 Oak Lane, Unit 5\nAustin, TX 78701-1234",
    ),
    ("us", "Our new place is 9 Birchwood Ct. Great neighbours, quiet street.", "9 Birchwood Ct"),
    ("us", "I used to live at 1313 Mockingbird Lane; now I rent in Ohio.", "1313 Mockingbird Lane"),
    # United Kingdom
    (
        "uk",
        "She lives at 10 Downing Street, London SW1A 2AA, United Kingdom.",
        "10 Downing Street, London SW1A 2AA, United Kingdom",
    ),
    (
        "uk",
        "Flat 3, 27 King's Road, Chelsea, London SW3 4RP is where the keys are.",
        "Flat 3, 27 King's Road, Chelsea, London SW3 4RP",
    ),
    ("uk", "Write to me at\n14 Queen's Road\nBristol\nBS8 1QU\nCheers, Tom", "14 Queen's Road\nBristol\nBS8 1QU"),
    ("uk", "The clinic moved to 5 Leith Walk, Edinburgh EH8 9YL last spring.", "5 Leith Walk, Edinburgh EH8 9YL"),
    (
        "uk",
        "The Old Rectory, Church Lane, Little Snoring NR21 0AA",
        "Old Rectory, Church Lane, Little Snoring NR21 0AA",
    ),
    ("uk", "Our flat is near M1 1AE these days.", "M1 1AE"),
    # Canada
    (
        "ca",
        "Head office: 350 Bay Street, Suite 700, Toronto, ON M5H 2S6.",
        "350 Bay Street, Suite 700, Toronto, ON M5H 2S6",
    ),
    (
        "ca",
        "Our cabin is at 88 Ridge Trail, Calgary, AB T2A 1C8 and has no phone.",
        "88 Ridge Trail, Calgary, AB T2A 1C8",
    ),
    ("ca", "Mail it to 24 Sussex Drive\nOttawa, Ontario\nK1A 0B1", "24 Sussex Drive\nOttawa, Ontario\nK1A 0B1"),
    (
        "ca",
        "Send to 1500 Rue Sherbrooke Ouest, Montréal (Québec) H3G 1L3 please",
        "1500 Rue Sherbrooke Ouest, Montréal (Québec) H3G 1L3",
    ),
    ("ca", "Visit 4500 Highway 7, Woodbridge, ON L4L 1A6 for the sale.", "4500 Highway 7, Woodbridge, ON L4L 1A6"),
    # France
    ("fr", "J'habite au 12 rue de la Paix, 75002 Paris depuis 2010.", "12 rue de la Paix, 75002 Paris"),
    (
        "fr",
        "L'adresse est 5, avenue des Champs-Élysées\n75008 Paris\nFrance",
        "5, avenue des Champs-Élysées\n75008 Paris\nFrance",
    ),
    (
        "fr",
        "Bât. B, Etage 3, 14 boulevard Haussmann, 75009 Paris.",
        "Bât. B, Etage 3, 14 boulevard Haussmann, 75009 Paris",
    ),
    ("fr", "Livraison au 3 bis place Bellecour, 69002 Lyon, merci.", "3 bis place Bellecour, 69002 Lyon"),
    ("fr", "Chez nous : 8, chemin des Vignes\n13100 Aix-en-Provence", "8, chemin des Vignes\n13100 Aix-en-Provence"),
    ("fr", "Le cabinet est 27 allée d'Alsace, 33000 Bordeaux CEDEX", "27 allée d'Alsace, 33000 Bordeaux CEDEX"),
    # Germany
    ("de", "Meine Adresse ist Hauptstraße 5, 10115 Berlin.", "Hauptstraße 5, 10115 Berlin"),
    (
        "de",
        "Bitte an:\nKarl-Marx-Allee 12a\n10178 Berlin\nDeutschland",
        "Karl-Marx-Allee 12a\n10178 Berlin\nDeutschland",
    ),
    ("de", "Wir wohnen in der Friedrichstr. 123, 10117 Berlin seit Mai.", "Friedrichstr. 123, 10117 Berlin"),
    (
        "de",
        "Die Praxis ist in der Berliner Straße 10a, 60311 Frankfurt am Main.",
        "Berliner Straße 10a, 60311 Frankfurt am Main",
    ),
    ("de", "Lieferadresse: Am Markt 3, 28195 Bremen", "Am Markt 3, 28195 Bremen"),
    ("de", "Unter den Linden 77\n10117 Berlin", "Unter den Linden 77\n10117 Berlin"),
    ("de", "I moved to 80331 München last year.", "80331 München"),
    # India
    (
        "in",
        "Deliver to Flat 4B, Sai Residency, 12th Cross, MG Road, Bengaluru 560001 before noon.",
        "Flat 4B, Sai Residency, 12th Cross, MG Road, Bengaluru 560001",
    ),
    (
        "in",
        "House No. 221, Sector 15, Chandigarh 160015 is my permanent address.",
        "House No. 221, Sector 15, Chandigarh 160015",
    ),
    ("in", "Office: B-12, Vasant Vihar, New Delhi - 110057", "B-12, Vasant Vihar, New Delhi - 110057"),
    (
        "in",
        "Plot No. 45, Road No. 12, Banjara Hills, Hyderabad, Telangana 500034, India",
        "Plot No. 45, Road No. 12, Banjara Hills, Hyderabad, Telangana 500034, India",
    ),
    (
        "in",
        "Our shop: 23/4, 2nd Main Road, Jayanagar 4th Block, Bengaluru 560 011.",
        "23/4, 2nd Main Road, Jayanagar 4th Block, Bengaluru 560 011",
    ),
    (
        "in",
        "Flat 201, Green Park Apartments,\nAndheri East,\nMumbai 400069",
        "Flat 201, Green Park Apartments,\nAndheri East,\nMumbai 400069",
    ),
    ("in", "#12, 3rd Cross, 5th Main, Indiranagar, Bengaluru", "#12, 3rd Cross, 5th Main, Indiranagar, Bengaluru"),
    # Brazil
    (
        "br",
        "Moro na Rua das Flores, 123, apto 42 - Centro, Curitiba - PR, 80010-010.",
        "Rua das Flores, 123, apto 42 - Centro, Curitiba - PR, 80010-010",
    ),
    (
        "br",
        "O escritório fica na Av. Paulista, 1578 - Bela Vista, São Paulo - SP, 01310-200.",
        "Av. Paulista, 1578 - Bela Vista, São Paulo - SP, 01310-200",
    ),
    ("br", "Alameda Santos 2000\nSão Paulo - SP\nCEP 01419-002", "Alameda Santos 2000\nSão Paulo - SP\nCEP 01419-002"),
    (
        "br",
        "Entregar na Travessa do Comércio, 45, Rio de Janeiro - RJ amanhã.",
        "Travessa do Comércio, 45, Rio de Janeiro - RJ",
    ),
    ("br", "A loja fica na Rua 25 de Março, 1000, São Paulo.", "Rua 25 de Março, 1000, São Paulo"),
    # Japan
    (
        "jp",
        "The hotel is at 1-2-3 Shibuya, Shibuya-ku, Tokyo 150-0002, Japan.",
        "1-2-3 Shibuya, Shibuya-ku, Tokyo 150-0002, Japan",
    ),
    (
        "jp",
        "Our Tokyo office: Roppongi 6-10-1, Minato-ku, Tokyo 106-6108.",
        "Roppongi 6-10-1, Minato-ku, Tokyo 106-6108",
    ),
    ("jp", "Osaka branch\n3-1-3 Umeda, Kita-ku\nOsaka 530-0001", "3-1-3 Umeda, Kita-ku\nOsaka 530-0001"),
    (
        "jp",
        "〒150-0002 東京都渋谷区渋谷2丁目21番1号 渋谷ビル5階",
        "〒150-0002 東京都渋谷区渋谷2丁目21番1号 渋谷ビル5階",
    ),
    ("jp", "住所は東京都新宿区西新宿2-8-1です。", "東京都新宿区西新宿2-8-1"),
    (
        "jp",
        "My Tokyo address is 〒150-0002 東京都渋谷区渋谷2丁目21番1号, please note it.",
        "〒150-0002 東京都渋谷区渋谷2丁目21番1号",
    ),
    ("jp", "大阪府大阪市北区梅田3丁目1番3号に来てください。", "大阪府大阪市北区梅田3丁目1番3号"),
    ("jp", "〒060-0001 北海道札幌市中央区北1条西2丁目", "〒060-0001 北海道札幌市中央区北1条西2丁目"),
]


@pytest.mark.parametrize(("fmt", "text", "address"), ADDRESSES, ids=[f"{c[0]}-{i}" for i, c in enumerate(ADDRESSES)])
def test_each_address_is_one_span_covering_exactly_it(fmt, text, address):
    assert found(text) == [address]


def test_every_format_has_at_least_three_addresses_and_a_block_of_lines():
    formats = {f for f, _, _ in ADDRESSES}
    assert formats == {"us", "uk", "ca", "fr", "de", "in", "br", "jp"}
    for fmt in formats:
        assert sum(f == fmt for f, _, _ in ADDRESSES) >= 3
        assert any(f == fmt and "\n" in a for f, _, a in ADDRESSES), fmt


# (text, the postcode alone)
POSTCODES = [
    ("zip code 90210 please", "90210"),
    ("Meu CEP é 04538-133.", "04538-133"),
    ("My PIN code is 110001.", "110001"),
    ("The postcode: EH1 2NG, if that helps.", "EH1 2NG"),
    ("Form field Postal code K1A0B1 was left as is.", "K1A0B1"),
]


@pytest.mark.parametrize(("text", "code"), POSTCODES)
def test_a_postcode_named_as_one_is_marked_alone(text, code):
    assert found(text) == [code]


@pytest.mark.parametrize(
    ("text", "town_and_code"),
    [
        ("I'm moving to Bengaluru 560001 next month.", "Bengaluru 560001"),
        ("The order ships from Mumbai 400001 via Pune.", "Mumbai 400001"),
        ("It was sent from Austin, TX 78701 yesterday.", "Austin, TX 78701"),
        ("We stayed in Calgary T2A 1C8 for a week.", "Calgary T2A 1C8"),
        ("Ela mora em Campinas - SP, 13083-970 agora.", "Campinas - SP, 13083-970"),
        ("The shop is in Kyoto 600-8216, near the station.", "Kyoto 600-8216"),
    ],
)
def test_a_postcode_after_its_town_is_marked_with_the_town(text, town_and_code):
    assert found(text) == [town_and_code]


def test_two_addresses_in_one_text_are_two_spans():
    text = "Ship to 12 rue Victor Hugo, 69002 Lyon and 4 Oak Road, Leeds LS6 2AA."
    assert found(text) == ["12 rue Victor Hugo, 69002 Lyon", "4 Oak Road, Leeds LS6 2AA"]
    text = "We live at 12 High St and my parents at 14 High St."
    assert found(text) == ["12 High St", "14 High St"]


def test_the_sentence_around_an_address_is_not_taken():
    # "and", a verb after a clause, sentence punctuation, a line that is not an address: each ends the address
    assert found("He lives at 4 Privet Drive, Little Whinging, Surrey. And he hates it.") == [
        "4 Privet Drive, Little Whinging, Surrey"
    ]
    assert found("Deliver to 9 Elm Road, Leeds LS6 2AA and call me when it arrives.") == ["9 Elm Road, Leeds LS6 2AA"]
    assert found("Send it to 21 Pine Street\nLooking forward to it!") == ["21 Pine Street"]
    assert found("Address: 10 Main St\nSpringfield\nIL 62701\n\nBest regards,\nAnn") == [
        "10 Main St\nSpringfield\nIL 62701"
    ]
    assert found("Bitte an Goethestrasse 12\n80336 München\nschicken, danke.") == ["Goethestrasse 12\n80336 München"]
    # the date or the phone number before an address is not a part of it
    assert found("On 4 May 2023, 10 Elm Road, Leeds LS6 2AA was sold.") == ["10 Elm Road, Leeds LS6 2AA"]
    assert found("Call 555 1234, Bristol BS8 1QU is the depot.") == ["Bristol BS8 1QU"]


# ordinary sentences with numbers, street-like words, times, prices, years, phones, dates: no span
ORDINARY = [
    "I read 3 books on the way home.",
    "Room 12 in Building 4 is where the meeting happens.",
    "Install version 2.3 Street Fighter patch before the tournament.",
    "We drove down Main Street and parked near the bank.",
    "The meeting starts at 10:30 and ends at 12:15 on Tuesday.",
    "It cost $45 at the store, or 30 euros online.",
    "In 2019 Main Street was closed for repairs for 6 months.",
    "See Chapter 5, Section 2 for the proof of the lemma.",
    "Call me on 555-1234 or (617) 555-0199 after 6 pm.",
    "The deadline is March 15, 2024, and the review is on 12/05/2024.",
    "We walked 5 miles down the road to the lake.",
    "The Apollo 11 Moon Walk was broadcast in 1969.",
    "My old phone has an MP3 4GB player and 16 GB of memory.",
    "Our team scored 3 goals in the second half at Park Stadium.",
    "Take Highway 101 north for 20 minutes and then exit.",
    "There were 250 people at the conference on Park Avenue last year.",
    "The Windows 11 Start Menu is slower than the old one.",
    "The recipe needs 2 cups of flour and 3 eggs.",
    "Order 560001 was shipped on Monday, ticket 12345 is still open.",
    "My PIN is 4821 and I never share it.",
    "He ran the 100 m in 9.58 seconds in Berlin in 2009.",
    "Top 10 Things To Do In Central Park this summer.",
    "Section 8 Housing Court rules changed in 2021.",
    "I have 2 kids, 3 dogs and a 4 lane road outside my window.",
    "The 5 Way Street festival is fun, I think.",
    "Flight BA 2490 leaves from Gate 22 at 07:45.",
    "Her score was 98 out of 100 on the final exam.",
    "Page 12, Figure 3 shows the results of the 2020 survey.",
    "Lot 45, Batch 7 of the vaccine was recalled in March.",
    "I was born on 4 July 1990 and moved in 2005.",
    "Invoice INV-2023-0042 totals 1,250.00 USD.",
    "Room 101, Floor 3 is the server room.",
    "We need 20000 Euros for the project in 2025.",
    "Call 020 7946 0958 during office hours.",
    "We met at the 2 Park Lane Hotel bar, not in the lobby.",
    "I bought 2 Google Drive plans and 1 Dropbox plan.",
    "She walked 3 blocks down the street to the bakery.",
    "The score was 3-2 after 90 minutes, then 4-2.",
    "Turn left after 200 metres, the road bends at the 3rd light.",
    "Exit 14 on Route 9 is closed until 6 June.",
    "Der Zug fährt um 14 Uhr ab, im Jahr 2024 gab es 12 Verspätungen.",
    "Il y a 3 places libres et 2 avenues fermées ce matin.",
    "O jogo terminou 2 a 1 na rua, perto da praça.",
    "We took 2 trains and 1 bus; the trip cost 45 pounds.",
    "Flight AI 302 to Mumbai departs at 14:05 from Terminal 2.",
    "The model number is BX 4421 and the serial is SN 88213 04.",
    "Send 3 copies to HR by 5 pm, room 4B on the 2nd floor.",
    "Her flat, 7B, faces the 3rd Avenue side of the park.",
    "We stayed at 5 star hotels in 3 cities: Lisbon, Porto and Faro.",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_sentences_give_no_span(text):
    assert found(text) == []


def test_at_least_25_ordinary_sentences():
    assert len(ORDINARY) >= 25


def _in_word(text: str, i: int) -> bool:
    """Whether ``i`` falls between two letters or digits of one word (kanji and kana have no words to cut)."""
    a, b = text[i - 1 : i], text[i : i + 1]
    return a.isalnum() and b.isalnum() and not any("\u3040" <= c <= "\u9fff" for c in a + b)


@pytest.mark.parametrize(
    "text",
    [
        *(t for _, t, _ in ADDRESSES),
        "Apt4B at 12 Main Streetwise is closed.",
        "Reach us at 77 Harbour Roadside Cafe, 3 Elm Streets away.",
        "The code 12345Berlin and 1 Oak Lanes are not addresses.",
        "He lives at 12 Main St.Springfield, or so he says.",
        "Our HQ is 42B Baker Street2 in the plan.",
        "Send it to 9 Elm Roadrunner Way, Leeds LS6 2AAx today.",
    ],
)
def test_spans_start_and_end_on_word_boundaries(text):
    [spans] = DETECTOR.detect([text])
    for s in spans:
        assert not _in_word(text, s.start) and not _in_word(text, s.end), (text, text[s.start : s.end])
        assert text[s.start : s.end] == text[s.start : s.end].strip()


def test_part_words_are_never_taken():
    assert found("Apt4B at 12 Main Streetwise is closed.") == []
    assert found("The code 12345Berlin and 1 Oak Lanes are not addresses.") == []


def test_batch_shape_empty_texts_and_signature():
    texts = ["", "no digits here at all", "Visit 221B Baker Street.", "12"]
    out = DETECTOR.detect(texts)
    assert len(out) == 4 and out[0] == [] and out[1] == [] and out[3] == []
    assert out[2] == [Span(6, 23, "ADDRESS")]
    assert DETECTOR.signature.startswith("addresses:")
    assert DETECTOR.detect([]) == []


def test_import_loads_no_nlp_library():
    code = (
        "import sys, ppt.detect.addresses\n"
        "heavy = [m for m in ('spacy', 'presidio_analyzer', 'torch', 'transformers') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# addresses of other countries (a street between two numbers, a street word first, units, military mail), each one
# span whatever follows it on the next lines (a real line break or a literal "\n" pasted from a log)
@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("Ship it to 212 Storgatan 14, Lund, Sweden please.", "212 Storgatan 14, Lund, Sweden"),
        (
            "Her flat: 77 Kongensgade 3\nApt. 12\nODENSE\nDenmark 5000",
            "77 Kongensgade 3\nApt. 12\nODENSE\nDenmark 5000",
        ),
        (
            r"addr: 9 Rautatienkatu 21\n Suite 4\n Tampere\n Finland 33100",
            r"9 Rautatienkatu 21\n Suite 4\n Tampere\n Finland 33100",
        ),
        ("Meet at Calle Mayor 45, Madrid.", "Calle Mayor 45, Madrid"),
        ("She moved to Via Garibaldi 8 last year.", "Via Garibaldi 8"),
        ("Write to ul. Długa 17 in Gdańsk", "ul. Długa 17"),
        ("The office is at 18 Odos Ermou Str. near the square", "18 Odos Ermou Str."),
        ("Post it to Unit 2050 Box 4190\nAPO AP 96522 today", "Unit 2050 Box 4190\nAPO AP 96522"),
        ("We live on the corner of Tverskaya 12 and Petrovka Lane", "corner of Tverskaya 12 and Petrovka Lane"),
    ],
)
def test_international_addresses_are_one_span(text, address):
    assert found(text) == [address]


@pytest.mark.parametrize(
    "text",
    [
        "We have 2 Python 3 servers.",
        "I bought 3 Apple 12 phones.",
        "Chapter 5 Section 2 covers 3 Laws 4.",
        "She was born on 4 July 1990.",
        "Rooms 4 and 5 have Wi-Fi 6 routers.",
        "Version 2 of Kubernetes 1 was released.",
    ],
)
def test_numbers_around_ordinary_words_are_no_address(text):
    assert found(text) == []
