"""Generated man pages and completions must match the current CLI."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_man_and_completions_are_current():
    r = subprocess.run(
        [sys.executable, "-m", "ppt.cli.docgen", "--check", "--root", str(ROOT)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr


def test_every_subcommand_has_a_man_page_and_completion():
    from ppt.cli.docgen import render

    files = render()
    for name in ("sanitize", "precompute", "cache", "env", "mechs"):
        assert f"man/ppt-{name}.1" in files
        assert f" {name}" in files["completions/ppt.fish"] or f"-a {name}" in files["completions/ppt.fish"]
        assert name in files["completions/ppt.bash"]
