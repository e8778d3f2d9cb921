"""A checkpoint that cannot be resumed is an exit code naming it, before any model loads or any query is
paid (reliability probe P-m8): a state file that is not JSON, not an object or missing a field is 65, a
--checkpoint naming a file is 2 (it failed at the first save, after a query was paid)."""

from __future__ import annotations

import json
import math

import pytest

from ppt.dpopt import checkpoint as ckpt
from ppt.dpopt.tune import TuneConfig, prepare
from ppt.io import ExitCode, PptError
from tests.helpers import ppt

TEXTS = [f"the quick brown fox {i} jumps over the lazy dog" for i in range(80)]
LABELS = ["positive" if i % 2 else "negative" for i in range(80)]
CFG = TuneConfig(labels=["negative", "positive"], eps=8.0, eps0=1.0, ensemble=6, shots=2, seed=5)
NO_MODEL = "/nonexistent/model"  # had it been loaded, the exit code would be 78


def saved_state(d) -> dict:
    """The state a run on ``d`` saves at its first query (no model needed)."""
    plan = prepare(CFG, TEXTS, LABELS, checkpoint=str(d))
    return {**plan.state, "accountant": plan.acct.state()}


def test_a_valid_state_round_trips(tmp_path):
    state = saved_state(tmp_path)
    ckpt.save(tmp_path, state)
    assert ckpt.load(tmp_path) == state
    plan = prepare(CFG, TEXTS, LABELS, checkpoint=str(tmp_path))
    assert plan.state == state and plan.acct.state() == state["accountant"]


def _without(key):
    return lambda s: {k: v for k, v in s.items() if k != key}


@pytest.mark.parametrize(
    "damage,needle",
    [
        (lambda s: b"nope\n", "not JSON"),
        (lambda s: b"\xff\xfe{}", "not JSON"),
        (lambda s: [], "a JSON list, not an object"),
        (_without("accountant"), "no 'accountant'"),
        (_without("key"), "no 'key'"),
        (lambda s: {**s, "candidates": {}}, "'candidates' is of the wrong type"),
        (lambda s: {**s, "key": "not hex"}, "'key' is not hexadecimal"),
        (lambda s: {**s, "result": []}, "'result' is of the wrong type"),
        (lambda s: {**s, "accountant": {"eps": "x"}}, "its accountant is not one"),
        (lambda s: {**s, "accountant": {**s["accountant"], "delta": 2}}, "its accountant is not one"),
    ],
)
def test_a_damaged_state_is_a_data_error_naming_the_file(tmp_path, damage, needle):
    bad = damage(saved_state(tmp_path))
    path = tmp_path / ckpt.NAME
    path.write_bytes(bad if isinstance(bad, bytes) else json.dumps(bad).encode())
    with pytest.raises(PptError) as e:
        prepare(CFG, TEXTS, LABELS, checkpoint=str(tmp_path))
    assert e.value.exit_code == ExitCode.DATAERR
    assert str(path) in e.value.message and needle in e.value.message and e.value.hint


def test_a_checkpoint_naming_a_file_is_refused_before_anything_is_spent(tmp_path):
    f = tmp_path / "ck"
    f.write_text("mine\n")
    for call in (lambda: ckpt.lock(f), lambda: prepare(CFG, TEXTS, LABELS, checkpoint=str(f))):
        with pytest.raises(PptError) as e:
            call()
        assert e.value.exit_code == ExitCode.USAGE and "is a file, not a directory" in e.value.message
    assert f.read_text() == "mine\n"
    with pytest.raises(PptError) as e:  # a directory that cannot be made: an I/O error, no traceback
        ckpt.lock(f / "ck")
    assert e.value.exit_code == ExitCode.IOERR and str(f / "ck") in e.value.message


def _rows(n: int = 80) -> str:
    return "".join(
        json.dumps({"id": i, "text": f"the quick brown fox {i} jumps", "label": ("negative", "positive")[i % 2]}) + "\n"
        for i in range(n)
    )


@pytest.mark.parametrize("content,code", [("[]", ExitCode.DATAERR), (None, ExitCode.USAGE)])
def test_cli_refuses_a_bad_checkpoint_before_loading_the_model(tmp_path, content, code):
    if content is None:  # --checkpoint names a file
        target = tmp_path / "ck"
        target.write_text("mine\n")
    else:
        (tmp_path / "ck").mkdir()
        (tmp_path / "ck" / ckpt.NAME).write_text(content)
        target = tmp_path / "ck"
    p = ppt(
        "dp-opt", "tune", "--labels", "negative,positive", "--model", NO_MODEL, "--checkpoint", str(target),
        stdin=_rows(),
    )  # fmt: skip
    assert p.returncode == code, p.stderr
    assert str(target) in p.stderr and "hint:" in p.stderr and "Traceback" not in p.stderr


def test_a_non_private_state_round_trips_infinite_eps(tmp_path):
    cfg = TuneConfig(labels=["negative", "positive"], eps=math.inf, ensemble=6, shots=2, seed=5)
    plan = prepare(cfg, TEXTS, LABELS, checkpoint=str(tmp_path))
    ckpt.save(tmp_path, {**plan.state, "accountant": plan.acct.state()})
    assert math.isinf(prepare(cfg, TEXTS, LABELS, checkpoint=str(tmp_path)).acct.eps)
