"""README's commands stay true: the test command is what CI runs, and the Examples blocks run."""

import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import shell_env

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _sh_blocks(section: str) -> list[str]:
    body = README.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", body, flags=re.S)


def test_quick_start_has_install_and_test_commands_and_ci_runs_both():
    install, tests = _sh_blocks("Quick start")
    first, *more = install.strip().splitlines()
    # the first command a newcomer runs installs the readable path and shows prompts they can read; the DP
    # mechanism on the same prompts beside it
    assert "[models,readable]" in first and "ppt models install" in first
    assert "ppt sanitize --preset readable" in first and "examples/" in first
    assert any("ppt sanitize --mech rantext" in line and "examples/prompts.jsonl" in line for line in more)
    assert "pytest" in tests and "readable" in tests.split("pip install -e", 1)[1].split()[0]
    ci = (ROOT / ".ci" / "run").read_text()
    lines = [line.strip() for line in ci.splitlines()]
    # CI runs README's commands exactly, in README's order, with `pip check` after the installing ones
    readme = [*install.strip().splitlines(), tests.strip()]
    assert all(line in lines for line in readme), [line for line in readme if line not in lines]
    at = [lines.index(line) for line in readme]
    assert at == sorted(at) and at[0] < lines.index("pip check") < at[-1]
    # a fresh virtualenv and an empty cache every run: nothing left on the machine makes CI green
    assert "python3 -m venv" in ci and "mktemp -d" in ci and 'PPT_CACHE="$work/cache"' in ci


RUN_SECTIONS = ("Examples", "Private and readable: protect what is sensitive, keep the rest")


@pytest.mark.parametrize("block", [b for sec in RUN_SECTIONS for b in _sh_blocks(sec)], ids=lambda b: b.split()[1])
def test_examples_run(block):
    r = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=shell_env(),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
