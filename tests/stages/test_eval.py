"""`ppt eval` as a user runs it (the real executable, in a subprocess)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import ppt


def test_cli_eval_summary_on_stdout_and_per_record():
    rows = [
        {"id": 1, "text": "a b a b a", "ref": "a b a b a", "items": ["Secret Name"]},
        {"id": 2, "text": "one two three four", "ref": "one two", "items": ["two"]},
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in rows)
    r = ppt("eval", "diversity,rouge", "phr", "--reference-field", "ref", "--items-field", "items", "-q", stdin=stdin)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["n_records"] == 2
    assert s["metrics"]["diversity"]["diversity"] == pytest.approx((1 / 3 + 1) / 2)
    assert s["metrics"]["rouge"]["rouge"] == pytest.approx((1 + 2 * 0.5 / 1.5) / 2)
    assert s["metrics"]["phr"]["phr"] == pytest.approx(0.5)
    r = ppt("eval", "metrics", "diversity", "--per-record", "-", "-q", stdin=stdin)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["id"] for x in lines] == [1, 2] and lines[1]["eval"]["diversity"]["diversity"] == 1.0
    assert json.loads(r.stderr.strip().splitlines()[-1])["metrics"]["diversity"]["n"] == 2
    assert "Secret" not in r.stderr


def test_cli_eval_errors():
    stdin = json.dumps({"id": 1, "text": "x"}) + "\n"
    assert ppt("eval", "nope", stdin=stdin).returncode == 2
    assert ppt("eval", "rouge", stdin=stdin).returncode == 2  # needs --reference-field
    r = ppt("eval", "rouge", "--reference-field", "ref", "--on-error", "skip", "-q", stdin=stdin)
    assert r.returncode == 1 and json.loads(r.stdout)["n_records"] == 0
