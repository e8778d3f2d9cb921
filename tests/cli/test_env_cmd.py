"""`ppt env` (the real executable, in a subprocess)."""

from __future__ import annotations

import json

from ppt.models.catalog import OFFLINE
from tests.helpers import ppt


def test_cli_env_json(tmp_cache):
    p = ppt("env", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["cache_dir"] == str(tmp_cache)
    assert {"ppt", "python", "torch", "transformers", "tiktoken"} <= set(info["versions"])
    assert "cuda_available" in info["device"]
    assert [m["alias"] for m in info["models"]] == list(OFFLINE)
    p = ppt("env")
    assert p.returncode == 0 and "offline models" in p.stdout and "cache dir" in p.stdout
