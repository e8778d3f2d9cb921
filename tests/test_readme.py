"""README's commands stay true: the test command is what CI runs, and the Examples blocks run."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _sh_blocks(section: str) -> list[str]:
    body = README.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", body, flags=re.S)


def test_quick_start_has_install_and_test_commands_and_ci_runs_the_test_one():
    install, tests = _sh_blocks("Quick start")
    assert "ppt sanitize" in install and "examples/prompts.jsonl" in install
    assert "pytest" in tests
    assert tests.strip() in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("block", _sh_blocks("Examples"), ids=lambda b: b.split()[1])
def test_examples_run(block):
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
