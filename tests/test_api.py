"""The Python API (issue 26): ppt.sanitize / ppt.Sanitizer give the CLI's records for the same ids, seed and options."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ppt
from ppt.io import ExitCode, PptError
from tests.helpers import ppt as run_ppt

TEXTS = ["the river bank holds money", "a quiet town near the water"]
OPTS = {"space": "glove-6b-50d:2000", "seed": 5}


def test_seeded_records_equal_the_clis():
    got = ppt.sanitize(TEXTS, mech="custext+", eps=3, **OPTS)
    lines = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS))
    r = run_ppt(
        "sanitize", "-m", "custext+", "-e", "3", "--space", "glove-6b-50d:2000", "--seed", "5", "-q", stdin=lines
    )
    assert r.returncode == 0, r.stderr
    assert got == [json.loads(line) for line in r.stdout.splitlines()]
    assert [g["id"] for g in got] == [0, 1] and all("ppt" in g for g in got)


def test_records_keep_their_fields_and_ids_and_texts_returns_strings():
    s = ppt.Sanitizer("custext+", 3, text_field="body", **OPTS)
    out = s([{"id": "a", "body": TEXTS[0], "lang": "en"}, {"body": TEXTS[1]}])
    assert out[0]["id"] == "a" and out[0]["lang"] == "en" and out[0]["ppt"]["sanitize"]["text_field"] == "body"
    assert "id" not in out[1]  # a record without an id keeps none; its position keys its noise
    again = s([{"id": "a", "body": TEXTS[0], "lang": "en"}])
    assert again[0] == out[0]  # the same id and seed: the same record
    texts = s.texts(TEXTS[:2])
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts) and texts != TEXTS[:2]
    assert list(s.iter(TEXTS[:2])) == s(TEXTS[:2])


def test_errors_raise_or_come_back_in_place_as_the_clis():
    with pytest.raises(PptError) as e:
        ppt.sanitize(["ok words", "   "], mech="custext+", eps=3, **OPTS)
    assert e.value.exit_code == ExitCode.DATAERR and "item 1 failed: empty_text" in e.value.message
    out = ppt.sanitize(
        ["!!!", "the river", ""],
        mech="custext+",
        eps=3,
        min_kept=1,
        on_error="record",
        policy={"punct": "drop"},
        **OPTS,
    )
    assert out[0]["error"]["type"] == "too_few_tokens" and out[0]["id"] == 0
    assert out[1]["id"] == 1 and "ppt" in out[1]
    assert out[2] == {"id": 2, "error": {"type": "empty_text", "message": "text field 'text' is empty", "line": 3}}
    with pytest.raises(PptError):
        ppt.sanitize([{"no_text": 1}], mech="custext+", eps=3, **OPTS)
    with pytest.raises(PptError):
        ppt.Sanitizer("custext+", 3, on_error="ignore", **OPTS)


def test_import_ppt_loads_nothing_heavy():
    code = "import sys, ppt; assert callable(ppt.Sanitizer.__init__); print('torch' in sys.modules)"
    cheap = "import sys, ppt; print('torch' in sys.modules, 'ppt.api' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", cheap], capture_output=True, text=True).stdout.split() == [
        "False",
        "False",
    ]
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).returncode == 0


def test_readable_preset_in_python():
    import ppt

    [rec] = ppt.sanitize(["He has asthma."], preset="readable", detect=("categories",), mapping="map")
    assert rec["text"] == "He has <HEALTH_1>." and rec["map"][0]["original"] == "asthma"
