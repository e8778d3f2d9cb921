"""Per-project defaults from ppt.toml / --config FILE / $PPT_CONFIG (issue 26): the file sets the options'
defaults, a flag on the command line wins, a typo is an error naming it, `ppt env` shows what was loaded."""

from __future__ import annotations

import json

from tests.helpers import ppt

REC = '{"id": 1, "text": "the river is wide"}\n'


def signature(r) -> str:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ppt"]["sanitize"]["signature"]


def test_the_file_sets_defaults_and_flags_win(tmp_path):
    (tmp_path / "ppt.toml").write_text('[sanitize]\nmech = "custext+"\neps = 3\nseed = 1\n')
    sig = signature(ppt("sanitize", "-q", stdin=REC, cwd=tmp_path))
    assert sig.startswith("custext+|eps:3|")
    assert signature(ppt("sanitize", "-q", "-e", "6", stdin=REC, cwd=tmp_path)).startswith("custext+|eps:6|")
    info = json.loads(ppt("env", "--json", cwd=tmp_path).stdout)["config"]
    assert info["path"].endswith("ppt.toml") and info["tables"]["sanitize"]["mech"] == "custext+"


def test_explicit_file_and_environment(tmp_path):
    cfg = tmp_path / "other.toml"
    cfg.write_text('[sanitize]\nmech = "custext+"\neps = 2\nseed = 1\n')
    assert signature(ppt("--config", str(cfg), "sanitize", "-q", stdin=REC)).startswith("custext+|eps:2|")
    assert signature(ppt(f"--config={cfg}", "sanitize", "-q", stdin=REC)).startswith("custext+|eps:2|")
    sig = signature(ppt("sanitize", "-q", stdin=REC, env={"PPT_CONFIG": str(cfg)}))
    assert sig.startswith("custext+|eps:2|")


def test_a_typo_is_an_error_naming_it(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[sanitize]\nmechh = "tem"\n')
    r = ppt("--config", str(cfg), "sanitize", "-q", stdin=REC)
    assert r.returncode == 78 and "no option 'mechh'" in r.stderr
    cfg.write_text('[sanitise]\nmech = "tem"\n')
    r = ppt("--config", str(cfg), "sanitize", "-q", stdin=REC)
    assert r.returncode == 78 and "[sanitise] is not a subcommand" in r.stderr
    cfg.write_text("mech = [")
    assert ppt("--config", str(cfg), "sanitize", stdin=REC).returncode == 78
