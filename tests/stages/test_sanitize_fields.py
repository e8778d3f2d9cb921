"""Several text fields in one pass (issue 26): `--text-field title --text-field body` perturbs each with its own
randomness; the stamp's privacy block composes them all; a record missing one fails alone."""

from __future__ import annotations

import json

from ppt.io import Record
from ppt.mechanisms import get_mechanism
from ppt.stages.sanitize import sanitize_records
from ppt.stages.sanitize_spec import SanitizeSpec
from tests.helpers import ppt


def recs():
    data = [
        {"id": 1, "title": "apple banana cherry", "body": "grape lemon mango melon"},
        {"id": 2, "title": "olive peach"},  # no body
    ]
    return [Record(line_no=i + 1, id=d["id"], data=d, text=d["title"]) for i, d in enumerate(data)]


def test_each_field_perturbed_and_the_stamp_composes_them(array_space):
    space = array_space(
        "fields", "apple banana cherry grape lemon mango melon olive peach pear plum".split(), seed=1, dim=6
    )
    mech = get_mechanism("tem", 1.0, space=space, quiet=True)
    one = sanitize_records(mech, recs()[:1], SanitizeSpec("tem", 1.0, text_field="title", seed=3))[0]
    both = sanitize_records(
        mech, recs(), SanitizeSpec("tem", 1.0, text_field="title", extra_text_fields=("body",), seed=3, diagnostics="d")
    )
    out, missing = both
    assert out["title"] == one["title"]  # the first field as a one-field run gives it
    assert out["body"] != "grape lemon mango melon" and len(out["body"].split()) == 4
    block = out["ppt"]["sanitize"]
    assert block["text_fields"] == ["title", "body"]
    [metric] = block["privacy"]["proven"]["metric"].values()
    [metric_one] = one["ppt"]["sanitize"]["privacy"]["proven"]["metric"].values()
    assert metric_one["eps"] == 3.0 and metric["eps"] == 7.0  # 3 + 4 perturbed tokens at eps 1 per unit
    assert [a["n_perturbed"] for a in out["d"]["accounting"]] == [3, 4]
    assert missing.type == "missing_text_field" and "body" in missing.message


def test_cli_repeated_text_field_and_refusals():
    line = json.dumps({"id": 1, "title": "the river bank", "body": "money for the town"}) + "\n"
    r = ppt(
        "sanitize",
        "-m",
        "custext+",
        "-e",
        "6",
        "--seed",
        "1",
        "--text-field",
        "title",
        "--text-field",
        "body",
        "-q",
        stdin=line,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ppt"]["sanitize"]["text_fields"] == ["title", "body"] and out["body"] != "money for the town"
    bad = ppt(
        "sanitize",
        "-m",
        "custext+",
        "--text-field",
        "title",
        "--text-field",
        "body",
        "--emit-alignment",
        "al",
        stdin=line,
    )
    assert bad.returncode == 2 and "one --text-field" in bad.stderr
