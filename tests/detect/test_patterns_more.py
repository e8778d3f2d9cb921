"""ppt's own pattern recognizers beside presidio's: IDs after their label, codes and secrets, usernames, sort
codes, day-month dates, ages in more phrasings, cards of every issuer range; and ordinary text they leave alone."""

from __future__ import annotations

import pytest

pytest.importorskip("presidio_analyzer")

from ppt.detect.build import build_detector  # noqa: E402


@pytest.fixture(scope="module")
def det():
    return build_detector(["patterns"])


def found(det, text: str) -> set[tuple[str, str]]:
    return {(text[s.start : s.end], s.kind) for s in det.detect([text])[0]}


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ("Your booking reference is ZP4KQ9, see you soon", "ZP4KQ9", "ID"),
        ("Ticket no. 88-AB-1203 was escalated", "88-AB-1203", "ID"),
        ("The token ghp_a8Xk29dLq0PzRt55bN was committed", "ghp_a8Xk29dLq0PzRt55bN", "ID"),
        ("sha 9b1e4c0a7d3f22e8a1b6 in the log", "9b1e4c0a7d3f22e8a1b6", "ID"),
        ("login: wanjiru.k", "wanjiru.k", "USERNAME"),
        ("DM me at @lagos_baker please", "@lagos_baker", "USERNAME"),
        ("her user is amara_99 on the forum", "amara_99", "USERNAME"),
        ("DB_USER=okello\nDB_PASS=x", "okello", "USERNAME"),
        ('  username = "li_wei"', "li_wei", "USERNAME"),
        ("I'm logged in as gjones and it fails", "gjones", "USERNAME"),
        ("0 2 * * * /home/mchen/backup.sh", "mchen", "USERNAME"),
        ("Sort code 30-94-12, account 11223344", "30-94-12", "ID"),  # the code label takes it first
        ("The hearing is on 14 Mar 2025.", "14 Mar 2025", "DATE_TIME"),
        ("It's his 40th birthday.", "40th", "AGE"),
        ("We married in 2016 in Accra.", "2016", "DATE_TIME"),
        ("ZIP: 5282", "5282", "ZIP_CODE"),
        ("my postcode is 25-410, Poland", "25-410", "ZIP_CODE"),
        ("she's 12 and loves chess", "12", "AGE"),
        ("Mastercard 2223 0031 2200 3222 was charged", "2223 0031 2200 3222", "CREDIT_CARD"),
    ],
)
def test_each_is_found(det, text, value, kind):
    assert (value, kind) in found(det, text)


@pytest.mark.parametrize(
    "text",
    [
        "We use COVID-19 data, ISO-8601 dates, GPT-4, UTF-8 and an RTX4090.",
        "The user is happy with the login page.",
        "Order 5 pizzas for 12 people.",
        "Python 3.12 added a new parser; see PEP 701.",
        "The score was 21-14 at half time.",
    ],
)
def test_ordinary_text_gives_nothing(det, text):
    assert found(det, text) == set()
