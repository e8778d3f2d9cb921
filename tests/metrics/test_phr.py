"""PHR counts listed private items absent from the output text, never what a mechanism flagged."""

from __future__ import annotations

import json

import pytest

from ppt.io import Record
from ppt.metrics.phr import phr
from ppt.stages.phr import PhrStage
from tests.helpers import ppt


def test_a_flagged_item_that_survives_is_counted_as_leaked():
    # a mechanism's own report says it replaced "Miller", but the output still holds it (a second mention)
    rec = {
        "text": "Mr Smith met Miller; Miller agreed.",
        "private_items": ["Miller", "Boston"],
        "flagged": ["Miller", "Boston"],
    }
    assert phr(rec["private_items"], rec["text"]) == {"absent": 1, "total": 2, "phr": 0.5}


def test_matching_is_case_and_format_insensitive_on_whole_tokens():
    assert phr(["617-555-0134"], "call 617 555 0134 now")["absent"] == 0
    assert phr(["ANN"], "ann is here")["absent"] == 0
    assert phr(["Ann"], "we announce")["absent"] == 1
    assert phr(["james.miller@example.com"], "write to James.Miller@Example.com")["absent"] == 0


def _records(rows):
    return [Record(line_no=i, id=i, data=r, text=r["text"]) for i, r in enumerate(rows)]


def test_stage_summary_pools_items_with_intervals_and_types():
    rows = [
        {"text": "Anna lives in Oslo", "private_items": ["Anna", "Oslo"], "private_types": ["name", "city"]},
        {
            "text": "someone lives somewhere",
            "private_items": ["Bert", "Rome", "42"],
            "private_types": ["name", "city", "age"],
        },
        {"text": "no list here"},
    ]
    st = PhrStage()
    out = st(_records(rows))
    assert out[0]["phr"] == {"absent": 0, "total": 2, "phr": 0.0}
    assert out[1]["phr"]["absent"] == 3
    assert out[2].type == "missing_items"
    s = st.summary()
    assert (s["items"], s["absent"], s["records"]) == (5, 3, 2) and s["phr"] == pytest.approx(0.6)
    lo, hi = s["ci95_wilson"]
    assert lo < 0.6 < hi
    blo, bhi = s["ci95_bootstrap_records"]
    assert 0.0 <= blo <= 0.6 <= bhi <= 1.0 and s["ci95_bootstrap_records"] == PhrStage.bootstrap(st)
    assert s["by_type"]["name"] == {
        "items": 2,
        "absent": 1,
        "phr": 0.5,
        "ci95_wilson": s["by_type"]["name"]["ci95_wilson"],
    }
    assert s["by_type"]["age"]["phr"] == 1.0 and s["by_type"]["city"]["absent"] == 1


def test_cli_phr_summary_on_stdout():
    lines = (
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "id": 1,
                    "text": "Bob from Leeds",
                    "private_items": ["Bob", "Leeds"],
                    "private_types": ["name", "city"],
                },
                {
                    "id": 2,
                    "text": "a person from a city",
                    "private_items": ["Eve", "Lyon"],
                    "private_types": ["name", "city"],
                },
            ]
        )
        + "\n"
    )
    r = ppt("eval", "phr", stdin=lines)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["phr"] == 0.5 and s["items"] == 4 and s["by_type"]["city"]["absent"] == 1
    assert "Leeds" not in r.stderr
