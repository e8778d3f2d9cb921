"""Same-kind surrogates under --protect detected (issue 25): a name by a name, a town by a town, a category word by
a word of its category, a number in its format; uniform draws that do not depend on the replaced value; the
same value the same surrogate within the record; restore puts the values back; the mapping never leaves."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy import stats

from ppt.detect.base import Span
from ppt.detect.categories import CategoryDetector
from ppt.mechanisms import get_mechanism
from ppt.mechanisms.privacy import privacy_block
from ppt.mechanisms.surrogate_lists import lists
from ppt.rng import record_generator
from ppt.stages.restore import restore_text

TEXT = (
    "Maria Lopez, a nurse in Lyon, has diabetes; call 555-123-4567 or maria.lopez@mail.com. "
    "Lopez was born on March 3, 1979 and Maria Lopez asked about diabetes."
)
KINDS = [
    ("Maria Lopez", "PERSON"),
    ("nurse", "OCCUPATION"),
    ("Lyon", "GPE"),
    ("diabetes", "HEALTH"),
    ("555-123-4567", "PHONE_NUMBER"),
    ("maria.lopez@mail.com", "EMAIL_ADDRESS"),
    ("Lopez", "PERSON"),
    ("March 3, 1979", "DATE"),
    ("Maria Lopez", "PERSON"),
    ("diabetes", "HEALTH"),
]


def spans_of(text: str, items=KINDS) -> list[Span]:
    out, at = [], 0
    for value, kind in items:
        i = text.index(value, at)
        out.append(Span(i, i + len(value), kind))
        at = i + len(value)
    return out


def run(text=TEXT, items=KINDS, seed=0, **params):
    from ppt.detect.lists import PhraseDetector

    m = get_mechanism("surrogate", 1.0, **params)
    m.detector = PhraseDetector([])  # set as under --protect detected (the spans below are given directly)
    [out] = m.perturb([text], [spans_of(text, items)], [record_generator(seed, 0)])
    return m, out


def test_each_span_gets_a_value_of_its_kind_consistently_and_the_rest_passes():
    _, out = run()
    by = {}
    for entry in out.mapping:
        by.setdefault((entry["kind"], entry["original"]), set()).add(entry["surrogate"])
    assert all(len(s) == 1 for s in by.values())  # the same value, the same surrogate, everywhere in the record
    (name,) = by[("PERSON", "Maria Lopez")]
    first, last = name.split()
    assert first in lists()["first"].text and last in lists()["last"].text
    assert by[("PERSON", "Lopez")] == {last} and by[("PERSON", "Maria")] == {first}  # word by word
    assert next(iter(by[("GPE", "Lyon")])) in lists()["city"].text
    for original, kind in (("nurse", "OCCUPATION"), ("diabetes", "HEALTH")):
        (sur,) = by[(kind, original)]
        assert sur in lists()[kind].text
        [[span]] = CategoryDetector().detect([sur])  # a health condition by something the detector calls one
        assert span.kind == kind
    (phone,) = by[("PHONE_NUMBER", "555-123-4567")]
    assert re.fullmatch(r"\d{3}-\d{3}-\d{4}", phone)
    (mail,) = by[("EMAIL_ADDRESS", "maria.lopez@mail.com")]
    assert re.fullmatch(r"[a-z-]+\.[a-z-]+\d\d@example\.(com|org|net)", mail)
    (date,) = by[("DATE", "March 3, 1979")]
    assert re.fullmatch(
        r"(January|February|March|April|May|June|July|August|September|October|November|December)"
        r" \d, \d{4}",
        date,
    )
    assert ", a " in out.text and " in " in out.text and "; call " in out.text and " asked about " in out.text
    for private in ("Maria", "Lopez", "Lyon", "555-123-4567", "mail.com"):
        assert private not in out.text
    assert out.accounting.n_perturbed == len(KINDS) and out.accounting.kept["undetected"] > 0


def test_draws_are_uniform_and_do_not_depend_on_the_value():
    """The surrogate of a category word is uniform over its list whatever the word, its own value included (a
    draw that avoided the original, or leaned towards it, would depend on the value and fail here)."""
    cands = lists()["SEXUAL_ORIENTATION"].text
    k = len(cands)
    counts = {}
    for original in (cands[0], cands[1]):
        text = f"they are {original} ."
        draws = [
            run(text, [(original, "SEXUAL_ORIENTATION")], seed=s)[1].mapping[0]["surrogate"] for s in range(80 * k)
        ]
        c = np.array([draws.count(x) for x in cands])
        assert c.sum() == 80 * k
        assert stats.chisquare(c).pvalue > 1e-4  # uniform, the original's own value as likely as any other
        counts[original] = c
    _, p, _, _ = stats.chi2_contingency(np.stack(list(counts.values())))
    assert p > 1e-4


def test_digits_are_uniform_and_the_format_is_kept():
    digits = []
    for s in range(400):
        _, out = run("call +1 (555) 123-4567 now", [("+1 (555) 123-4567", "PHONE_NUMBER")], seed=s)
        got = out.mapping[0]["surrogate"]
        assert re.fullmatch(r"\+\d \(\d{3}\) \d{3}-\d{4}", got)
        digits += [int(c) for c in got if c.isdigit()]
    assert stats.chisquare(np.bincount(digits, minlength=10)).pvalue > 1e-4


def test_draws_avoid_the_released_text_and_each_other(monkeypatch):
    from ppt.mechanisms import surrogate_lists

    fixed = {**lists(), "city": surrogate_lists.Candidates(["Oslo", "Agra", "Porto", "Braga"])}
    monkeypatch.setattr(surrogate_lists, "lists", lambda: fixed)
    monkeypatch.setattr("ppt.mechanisms.surrogate.lists", lambda: fixed)
    text = "From Lyon to Paris: Oslo and Agra are far."
    for s in range(30):
        _, out = run(text, [("Lyon", "GPE"), ("Paris", "GPE")], seed=s)
        got = [m["surrogate"] for m in out.mapping]
        assert sorted(got) == ["Braga", "Porto"]  # never a town the prompt names raw, never two values one town


def test_kinds_without_a_list_and_formats_false_get_placeholders():
    items = [("Acme Corp", "ORG"), ("555-123-4567", "PHONE_NUMBER"), ("yesterday", "DATE")]
    _, out = run("Acme Corp called 555-123-4567 yesterday.", items)
    assert out.text.startswith("<ORG_1> called ") and out.text.endswith(" <DATE_1>.")
    m, out = run("Acme Corp called 555-123-4567 yesterday.", items, formats=False)
    assert out.text == "<ORG_1> called <PHONE_NUMBER_1> <DATE_1>."
    assert m.signature_params() == {"formats": False}


def test_stamp_states_the_conditional_zero_and_what_it_is_given():
    m, out = run()
    block = privacy_block(m, out.accounting)
    assert block["proven"]["eps"] == "inf" and "undetected" in block["unprotected_by_policy"]
    [cond] = block["conditional"]
    assert cond["eps_given"] == 0.0 and cond["tokens"] == len(KINDS)
    assert "format" in cond["given"] and "undetected text" in cond["given"]
    m2, out2 = run(formats=False)
    [cond2] = privacy_block(m2, out2.accounting)["conditional"]
    assert "format" not in cond2["given"]
    assert "Maria" not in json.dumps(block) and "Lyon" not in json.dumps(block)
    with pytest.raises(ValueError, match="no eps"):
        get_mechanism("surrogate", 3.0)


def test_restore_puts_every_value_back():
    _, out = run()
    sur = {(m["kind"], m["original"]): m["surrogate"] for m in out.mapping}
    name = sur[("PERSON", "Maria Lopez")]
    answer = (
        f"Dear {name}, as a {sur[('OCCUPATION', 'nurse')]} in {sur[('GPE', 'Lyon')]} with "
        f"{sur[('HEALTH', 'diabetes')]}, {name.split()[1]} should call {sur[('PHONE_NUMBER', '555-123-4567')]}."
    )
    restored, n = restore_text(answer, out.mapping)
    assert restored == "Dear Maria Lopez, as a nurse in Lyon with diabetes, Lopez should call 555-123-4567." and n == 6


def test_readable_preset_with_surrogates_restores_and_query_refuses_the_mapping(tmp_path):
    """`ppt sanitize --preset readable -m surrogate --mapping map | (answer) | ppt restore`; `ppt query` never
    sends the mapping."""
    from tests.helpers import ppt

    rec = {"id": 1, "text": "My sister has asthma and HIV."}
    r = ppt(
        "sanitize",
        "--preset",
        "readable",
        "-m",
        "surrogate",
        "--detect",
        "categories",
        "--mapping",
        "map",
        "--seed",
        "3",
        "-q",
        stdin=json.dumps(rec) + "\n",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert "asthma" not in out["text"] and "HIV" not in out["text"]
    assert out["text"].startswith("My sister has ") and " and " in out["text"]
    assert out["ppt"]["sanitize"]["mapping_field"] == "map" and len(out["map"]) == 2
    out["generation"] = out["text"].replace("My ", "Your ")
    back = ppt("restore", "-q", stdin=json.dumps(out) + "\n")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["restored"] == "Your sister has asthma and HIV."
    from ppt.testing import EchoService, loopback

    svc = EchoService()
    with loopback(svc) as (_, url):
        q = ppt(
            "query",
            "--model",
            "m",
            "--base-url",
            url,
            "--template",
            "{text} {map}",
            "--on-error",
            "skip",
            stdin=json.dumps(out) + "\n",
        )
    assert q.returncode == 1 and "raw_field_in_template" in q.stderr and not svc.bodies
    for entry in out["map"]:
        assert entry["original"] not in q.stderr


def test_no_slur_is_ever_a_candidate_and_candidates_are_single_words():
    from ppt.mechanisms.surrogate_lists import OFFENSIVE

    for kind in ("SEXUAL_ORIENTATION", "ETHNICITY", "HEALTH", "OCCUPATION", "POLITICAL"):
        cands = lists()[kind].text
        assert cands and not set(cands) & OFFENSIVE and all(len(c.split()) == 1 for c in cands)
    assert {"dyke", "nigger", "moron"} <= OFFENSIVE


# issue 37, row 3: a surrogate shows only its stamped condition


def texts_of(text, items, seeds=range(40)):
    return [run(text, items, seed=s)[1].text for s in seeds]


def test_month_and_day_names_in_any_case_are_drawn_in_the_written_case():
    from ppt.mechanisms.surrogate_lists import MONTHS

    months = {m.lower() for names in MONTHS for m in names}
    low = texts_of("on 3 march 2020 .", [("3 march 2020", "DATE")])
    up = texts_of("on 12 SEPTEMBER 2020 .", [("12 SEPTEMBER 2020", "DATE")])
    for outs, case in ((low, str.lower), (up, str.upper)):
        words = [t.split()[2] for t in outs]
        assert all(w == case(w) and w.lower() in months for w in words)
        assert len(set(words)) > 5  # drawn, not kept
    day = texts_of("on monday 3 May", [("monday 3 May", "DATE")])
    assert len({t.split()[1] for t in day}) > 3 and all(t.split()[1].islower() for t in day)


def test_names_are_replaced_whole_so_shared_real_words_do_not_show():
    """Given the condition, "Maria Lopez ... Maria Garcia" and "Maria Lopez ... Anna Garcia" give the same
    release (same seed, same output); the same person keeps one surrogate; a lone word of a name its word."""
    a = "Maria Lopez met Maria Garcia and Carlos Lopez; Lopez and Maria Lopez left."
    b = "Maria Lopez met Anna Garcia and Carlos Perez; Lopez and Maria Lopez left."
    items_a = [(n, "PERSON") for n in ("Maria Lopez", "Maria Garcia", "Carlos Lopez", "Lopez", "Maria Lopez")]
    items_b = [(n, "PERSON") for n in ("Maria Lopez", "Anna Garcia", "Carlos Perez", "Lopez", "Maria Lopez")]
    for s in range(20):
        _, out_a = run(a, items_a, seed=s)
        _, out_b = run(b, items_b, seed=s)
        assert out_a.text == out_b.text
        names = [m["surrogate"] for m in out_a.mapping if len(m["original"].split()) > 1]
        assert names[0] == names[-1]  # one person, one surrogate
        people = set(names)
        assert len(people) == 3 and len({w for n in people for w in n.split()}) == 6  # no word shared
        lone = out_a.text.split("; ")[1].split()[0]
        assert lone == names[0].split()[1]  # "Lopez" alone -> Maria Lopez's surrogate surname
        restored, _ = restore_text(out_a.text, out_a.mapping)
        assert restored == a


def test_a_date_or_quantity_span_keeps_no_word_of_the_original():
    items = [("Ramadan 2023", "DATE"), ("Eid 2023", "DATE"), ("5 million yen", "MONEY")]
    text = "I fasted during Ramadan 2023, prayed on Eid 2023 and gave 5 million yen."
    for s in range(5):
        _, out = run(text, items, seed=s)
        assert out.text == "I fasted during <DATE_1>, prayed on <DATE_2> and gave <MONEY_1>."
    _, out = run("born the 1st of June 2011", [("the 1st of June 2011", "DATE")])
    assert re.fullmatch(r"born the \d(st|nd|rd|th) of [A-Z][a-z]+ \d{4}", out.text)


def test_ordinal_suffixes_are_drawn_with_their_number():
    from ppt.mechanisms.surrogate_lists import ordinal_suffix

    assert [ordinal_suffix(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 111, 0)] == [
        "st", "nd", "rd", "th", "th", "th", "th", "st", "nd", "rd", "th", "th",
    ]  # fmt: skip
    seen = set()
    for s in range(60):
        _, out = run("born on March 23rd, 1985 and 1ST", [("March 23rd, 1985", "DATE"), ("1ST", "ORDINAL")], seed=s)
        (day, suffix), (one, suffix1) = re.findall(r"(\d+)(rd|st|nd|th|RD|ST|ND|TH)\b", out.text)
        assert suffix == ordinal_suffix(int(day)) and suffix1 == ordinal_suffix(int(one)).upper()
        seen.add(suffix)
    assert seen == {"st", "nd", "rd", "th"}
    # the release does not depend on the original's last digit
    assert texts_of("on March 23rd", [("March 23rd", "DATE")]) == texts_of("on March 21st", [("March 21st", "DATE")])
