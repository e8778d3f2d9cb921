"""The bash completion offers option values, scoped by the command path (issue 26), driven in a real bash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "completions" / "ppt.bash"


def complete(*words: str) -> list[str]:
    """COMPREPLY for the command line ``ppt WORDS`` with the cursor on the last word."""
    quoted = " ".join(f"'{w}'" for w in ("ppt", *words))
    script = (
        f"source '{SCRIPT}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; _ppt; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, check=True).stdout
    return [w for w in out.splitlines() if w]


pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def test_values_of_choice_options_and_known_names():
    from ppt.mechanisms.registry import MECHANISMS

    assert complete("sanitize", "--mech", "") == sorted(MECHANISMS)  # the registry's names
    assert {"cape", "custext+", "rantext", "santext+", "tem"} <= set(MECHANISMS)
    assert complete("sanitize", "--mech", "cus") == ["custext", "custext+"]
    assert complete("sanitize", "--on-error", "") == ["fail", "skip", "record"]
    assert complete("sanitize", "--numbers", "d") == ["drop"]
    assert complete("attack", "knn", "--on-error", "s") == ["skip"]
    assert "glove-6b-50d" in complete("sanitize", "--space", "")


def test_an_option_with_a_free_value_leaves_it_to_the_shell_and_flags_still_complete():
    assert complete("sanitize", "--input", "") == []  # files: bash's default completion (-o default)
    assert "--protect" in complete("sanitize", "--pro")
    assert "tune" in complete("dp-opt", "") and "sweep" not in complete("dp-opt", "")  # this path's subcommands


def test_help_keeps_literal_brackets():
    """Issue 26: rich read "[ray]" and "[[orig_row, ...]]" in help text as markup and dropped them."""
    import re

    import typer.main

    from ppt.cli.docgen import _tree
    from ppt.cli.main import app
    from tests.helpers import ppt

    r = ppt("sanitize", "--help", env={"COLUMNS": "200"})
    assert "pip install 'ppt-private-prompts[ray]'" in r.stdout and "[[orig_row, new_row, start, end], ...]" in r.stdout
    tag = re.compile(r"\[/?(bold|dim|italic)?\]")
    for path, cmd in _tree(typer.main.get_command(app)):
        for p in cmd.params:
            text = tag.sub("", getattr(p, "help", None) or "")
            assert not re.search(r"(?<!\\)\[", text), f"{' '.join(path)} {p.name}: escape '[' as '\\[' in its help"


def test_an_option_given_twice_that_keeps_one_value_is_a_usage_error():
    """Issue 26: `--text-field a --text-field b` silently kept the last."""
    from tests.helpers import ppt

    for args in (
        ["query", "--text-field", "a", "--text-field", "b"],  # (sanitize takes several: it sanitizes each)
        ["sanitize", "-m", "tem", "--mech=cape"],
        ["attack", "knn", "--space", "x", "--space", "y"],
    ):
        r = ppt(*args, stdin="")
        assert r.returncode == 2 and "is given more than once" in r.stderr, args
    ok = ppt(
        "sanitize",
        "-m",
        "custext+",
        "--space",
        "glove-6b-50d:2000",
        "-p",
        "k=5",
        "-p",
        "k=5",
        "-q",
        stdin='{"text": "the river"}\n',
    )
    assert ok.returncode == 0, ok.stderr  # repeatable options stay repeatable
