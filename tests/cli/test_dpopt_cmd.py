"""`ppt dp-opt tune|eval|apply` (the real executable): validation before any model, exit codes, outputs."""

from __future__ import annotations

import json

import pytest

from ppt.io import ExitCode
from tests.helpers import ppt

LAB = "negative,positive"


def _rows(n: int, labels=("negative", "positive")) -> str:
    return "".join(
        json.dumps({"id": i, "text": f"the quick brown fox {i} jumps", "label": labels[i % len(labels)]}) + "\n"
        for i in range(n)
    )


@pytest.fixture
def train(tmp_path):
    p = tmp_path / "train.jsonl"
    p.write_text(_rows(80))
    return p


# A model path that does not exist: had the model been loaded, the exit code would be CONFIG (78).
NO_MODEL = "/nonexistent/model"


@pytest.mark.parametrize(
    "extra,rows,code,needle",
    [
        ([], _rows(80, ("negative", "positive", "neutral")), ExitCode.DATAERR, "outside --labels"),
        # as many subsets as records: too few whatever the unseeded split key draws (70 passed ~2e-4 of runs)
        (["--ensemble", "80"], _rows(80), ExitCode.DATAERR, "too few"),
        (["--eps", "0.05", "--eps0", "4"], _rows(80), ExitCode.USAGE, "cannot cover one token"),
        ([], '{"id": 1, "text": "x"}\n', ExitCode.DATAERR, "label field"),
        ([], "not json\n", ExitCode.DATAERR, "line 1"),
    ],
)
def test_tune_validation_fails_before_loading_a_model(tmp_path, extra, rows, code, needle):
    p = ppt("dp-opt", "tune", "--labels", LAB, "--model", NO_MODEL, *extra, stdin=rows)
    assert p.returncode == code, p.stderr
    assert needle in p.stderr and "hint:" in p.stderr
    assert "fox" not in p.stderr and p.stdout == ""


def test_missing_input_is_noinput():
    p = ppt("dp-opt", "tune", "--labels", LAB, "-i", "/nonexistent.jsonl", "--model", NO_MODEL)
    assert p.returncode == ExitCode.NOINPUT


@pytest.mark.slow(reason="DP-OPT tune, eval and apply through the CLI on the tiny LM")
def test_tune_eval_apply_on_a_tiny_model(tiny_lm, train, tmp_path):
    out = tmp_path / "prompt.json"
    p = ppt(
        "dp-opt",
        "tune",
        "-i",
        str(train),
        "--labels",
        LAB,
        "--model",
        str(tiny_lm),
        "--eps",
        "8",
        "--eps0",
        "1",
        "--ensemble",
        "6",
        "--shots",
        "2",
        "--max-prompts",
        "2",
        "--max-tokens",
        "3",
        "--seed",
        "1",
        "--checkpoint",
        str(tmp_path / "ck"),
        "-o",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())
    b = res["ppt"]["dp-opt"]
    g = b["generation"]
    assert res["instruction"] in res["candidates"] and b["private"] and b["seeded"]
    assert (
        0 < g["eps"] <= 8
        and g["queries"] >= 1
        and {"eps0", "delta0", "k_bar", "failures", "accountant", "amplification"} <= set(g)
    )
    assert res["validation_correct"] is None  # counts are not released at finite eps
    p = ppt("dp-opt", "eval", "--prompt", str(out), "-i", str(train), "--model", str(tiny_lm))
    assert p.returncode == 0, p.stderr
    ev = json.loads(p.stdout)
    assert ev["n"] == 80 and ev["ci95"][0] <= ev["accuracy"] <= ev["ci95"][1]
    p = ppt("dp-opt", "apply", "--prompt", str(out), stdin=_rows(2))
    assert p.returncode == 0, p.stderr
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    assert recs[0]["text"].startswith("Instruction: ") and recs[0]["text"].endswith("Output:")
    assert recs[0]["ppt"]["dp-opt"]["prompt_eps"] == 8.0


def test_eval_needs_one_scorer_and_known_labels(tiny_lm, train, tmp_path):
    prompt = tmp_path / "p.json"
    prompt.write_text(json.dumps({"instruction": "Classify.", "labels": ["negative", "positive"], "init": "x"}))
    p = ppt("dp-opt", "eval", "--prompt", str(prompt), "-i", str(train))
    assert p.returncode == ExitCode.USAGE
    p = ppt("dp-opt", "eval", "--prompt", str(prompt), "--model", NO_MODEL, stdin=_rows(3, ("negative", "other")))
    assert p.returncode == ExitCode.DATAERR
    p = ppt("dp-opt", "eval", "--prompt", str(tmp_path / "none.json"), "--model", NO_MODEL, stdin=_rows(3))
    assert p.returncode == ExitCode.NOINPUT
