"""bench/pii_sets.py (issue 35): the independent sets' loading, split and scoring; the methods themselves are not
run here (bench/pii.py --set ... runs them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import pii_sets  # noqa: E402

FIXTURE = Path(__file__).with_name("pii_fixture.jsonl")


@pytest.fixture(scope="module")
def stop() -> set[str]:
    from ppt.mechanisms.policy import stopwords_en

    return set(stopwords_en())


def rec(text: str, *items: tuple[str, str]) -> dict:
    return {"id": "x", "text": text, "items": [{"value": v, "kind": k} for v, k in items]}


def test_read_split_and_drop_values_not_in_text():
    tune = pii_sets.read_jsonl_set(FIXTURE, "tune")
    assert [r["id"] for r in tune] == ["f1", "f2"]
    assert [it["value"] for it in tune[1]["items"]] == ["Since my chemo started"]  # "not in the text" dropped
    report = pii_sets.read_jsonl_set(FIXTURE, "report")
    assert [r["id"] for r in report] == ["f3"] and report[0]["items"] == []
    recs, meta = pii_sets.load("freeform", "tune", 1, None, str(FIXTURE))
    assert len(recs) == 1 and meta["split"] == "tune"


def test_lenient_and_strict(stop):
    r = rec("I'm Maho Tanaka.", ("Maho Tanaka", "PERSON"))
    assert pii_sets.score_record(r, "I'm <PERSON_1>.", stop) == [(True, True)]
    assert pii_sets.score_record(r, "I'm Maho <PERSON_1>.", stop) == [(True, False)]  # a word leaked
    assert pii_sets.score_record(r, "I'm maho   TANAKA.", stop) == [(False, False)]  # case and spaces
    # a word of the value that is legitimately elsewhere in the prompt is no leak; one more occurrence is
    r = rec("Paris Hilton flew to Paris.", ("Paris Hilton", "PERSON"))
    assert pii_sets.score_record(r, "<PERSON_1> flew to Paris.", stop) == [(True, True)]
    assert pii_sets.score_record(r, "Paris <PERSON_1> flew to Paris.", stop) == [(True, False)]
    # whole words only; single characters and stopwords are not words of a value
    r = rec("Ann and J. Doe", ("Ann", "PERSON"), ("J. Doe", "PERSON"))
    assert pii_sets.score_record(r, "announce J. <PERSON>", stop) == [(True, True), (True, True)]


def test_evaluate_content_kinds_and_changes(stop):
    recs = [
        rec("My friend Maho Tanaka has diabetes badly.", ("Maho Tanaka", "PERSON"), ("diabetes", "HEALTH")),
        rec("Please book the meeting room."),
    ]
    res = pii_sets.evaluate(recs, ["My friend <PERSON_1> has diabetes badly.", "Please book the <X> room."], stop)
    assert res["lenient"]["k"] == 1 and res["lenient"]["n"] == 2
    assert res["by_kind"]["special categories"]["items"] == 1
    assert res["by_kind"]["HEALTH"]["lenient"]["rate"] == 0.0
    # content words: friend, badly, please, book, meeting, room; "meeting" replaced
    assert (res["content_kept"]["k"], res["content_kept"]["n"]) == (5, 6)
    assert res["prompts_changed"]["k"] == 2
    assert [(leak["value"], leak["strict_only"]) for leak in res["_leaks"]] == [("diabetes", False)]


def test_paired_bootstrap():
    same = [(1, 2), (0, 1), (3, 3)]
    assert pii_sets.paired_bootstrap(same, same) == {"diff": 0.0, "ci95": [0.0, 0.0]}
    d = pii_sets.paired_bootstrap([(2, 2)] * 5, [(0, 2)] * 5)
    assert d["diff"] == 1.0 and d["ci95"] == [1.0, 1.0]


def test_show_leaks_refused_on_report():
    args = argparse.Namespace(split="report", show_leaks=3, set="freeform", data=str(FIXTURE))
    with pytest.raises(SystemExit, match="tune split only"):
        pii_sets.main(args)


@pytest.mark.slow(reason="presidio-evaluator's generator loads its fake-person records and Faker (~10 s)")
def test_outside_split_by_template():
    pytest.importorskip("presidio_evaluator")
    tune = pii_sets.outside("tune", 6, 1)
    assert tune == pii_sets.outside("tune", 6, 1)  # deterministic
    report = pii_sets.outside("report", 6, 2026)
    assert all(r["template"] % 2 == 0 for r in tune) and all(r["template"] % 2 == 1 for r in report)
    for r in tune + report:
        assert all(it["value"] in r["text"] for it in r["items"])
