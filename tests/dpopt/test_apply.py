"""`ppt dp-opt apply` (issue 37, row 6): the stamp says whether the wrapped text is raw and that the prompt's
eps covers the tuning data only; the help example's pipeline runs to `ppt query` (the echo service)."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.helpers import ppt

PROMPT = {
    "instruction": "Classify the sentiment.",
    "labels": ["negative", "positive"],
    "init": "Classify the sentiment.",
    "ppt": {"dp-opt": {"eps": 8.0, "delta": 1e-5}},
}
NEW = {"id": 1, "text": "My neighbour Alice Smith is awful"}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "prompt.json").write_text(json.dumps(PROMPT))
    (tmp_path / "new.jsonl").write_text(json.dumps(NEW) + "\n")
    (tmp_path / "deny.txt").write_text("Alice Smith\n")
    return tmp_path


def test_a_raw_record_is_labelled_raw_and_the_prompt_eps_covers_the_tuning_data_only(files):
    p = ppt("dp-opt", "apply", "--prompt", str(files / "prompt.json"), "-i", str(files / "new.jsonl"))
    assert p.returncode == 0, p.stderr
    rec = json.loads(p.stdout)
    b = rec["ppt"]["dp-opt"]
    assert "Alice Smith" in rec["text"] and b["applied"] is True and b["prompt_eps"] == 8.0
    assert b["input"].startswith("raw (not sanitized)")
    assert "tuning data only" in b["prompt_eps_covers"] and "not protected" in b["prompt_eps_covers"]


def _help_example() -> str:
    from ppt.cli.dpopt_cmd import apply

    lines = [ln.strip() for ln in (apply.__doc__ or "").splitlines() if ln.strip().startswith("Example: ppt ")]
    assert len(lines) == 1, apply.__doc__
    return lines[0].removeprefix("Example: ")


def test_the_help_example_runs_through_ppt_query(files):
    """Each command of the help example as it is written, with what a test needs added (a cheap sanitizer,
    the echo service's URL): the record reaches the remote side sanitized, not stopped at not_sanitized."""
    pytest.importorskip("httpx")
    from ppt.testing import EchoService, loopback

    example = _help_example()
    stages = [shlex.split(s) for s in example.split("|")]
    assert [s[:2] for s in stages] == [["ppt", "sanitize"], ["ppt", "dp-opt"], ["ppt", "query"]]
    extra = {
        "sanitize": ["-m", "placeholder", "--protect", "detected", "--deny", "deny.txt", "-q"],
        "dp-opt": [],
        "query": [],
    }
    with loopback(EchoService()) as (_, url):
        extra["query"] = ["--base-url", url]
        out = None
        for argv in stages:
            p = ppt(*argv[1:], *extra[argv[1]], stdin=out or "", cwd=files)
            assert p.returncode == 0, (argv, p.stderr)
            out = p.stdout
    rec = json.loads(out)
    assert "not_sanitized" not in out and "error" not in rec
    assert rec["ppt"]["query"] and rec["ppt"]["dp-opt"]["input"].startswith("sanitized")
    assert "Alice Smith" not in out and "Classify the sentiment." in out
