"""Help prose reflows to the terminal (issue 26: the docstrings' hard wraps at ~105-120 columns came out ragged
at 80 columns, and never used a wider terminal); examples keep their lines; the man pages fill their prose."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from ppt.cli.help import reflow
from tests.helpers import ppt

# commands whose help has long paragraphs and example blocks
COMMANDS = [("sanitize",), ("dp-opt", "tune"), ("query",), ("serve",), ("eval", "metrics"), ("report",)]
_MARKUP = re.compile(r"\[/?[a-z ]*\]")


@pytest.fixture(autouse=True)
def _width_from_columns(monkeypatch):
    """rich takes the width from $COLUMNS unless typer was given $TERMINAL_WIDTH (read once, at its import)."""
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    try:
        import typer.rich_utils as rich_utils
    except ImportError:  # pragma: no cover - typer without rich
        return
    if getattr(rich_utils, "MAX_WIDTH", None) is not None:
        monkeypatch.setattr(rich_utils, "MAX_WIDTH", None)


def _source_help(path: tuple[str, ...]) -> str:
    """The command's help as written (markup removed), read from the click command typer builds."""
    import typer

    from ppt.cli.main import app

    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    import inspect

    text = inspect.cleandoc(cmd.help or "").replace("\\[", "\x00")
    return _MARKUP.sub("", text).replace("\x00", "[")


def _render(path: tuple[str, ...], columns: int) -> list[str]:
    """The description part of ``ppt PATH --help`` at that width: the lines between Usage and the first panel."""
    r = ppt(*path, "--help", env={"COLUMNS": str(columns)})
    assert r.returncode == 0, r.stderr
    lines = [line.rstrip() for line in r.stdout.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Usage:"))
    end = next(i for i, line in enumerate(lines) if line.lstrip().startswith("╭"))
    return lines[start + 1 : end]


def _prose(line: str) -> bool:
    """A rendered prose line: rich's one-space pad, then text (an example is indented further)."""
    return line.startswith(" ") and len(line) > 1 and line[1] != " "


def _paragraph_starts(text: str) -> list[str]:
    """Each paragraph's leading run of prose lines joined into one string (what a reader sees as one paragraph)."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        run = []
        for line in para.split("\n"):
            if line[:1] in (" ", "\t") or not line.strip():
                break
            run.append(line.strip())
        if run:
            out.append(" ".join(run))
    return out


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_at_80_columns_no_prose_line_ends_early(path):
    lines = _render(path, 80)
    assert lines
    assert max(len(line) for line in lines) <= 80
    short = [
        line
        for line, after in zip(lines, lines[1:])
        if _prose(line) and _prose(after) and len(line) < 40  # the next line continues the same paragraph
    ]
    assert not short, f"ragged help: lines that end early although their paragraph goes on: {short}"


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_at_200_columns_a_paragraph_fills_the_line(path):
    lines = _render(path, 200)
    text = "\n".join(lines)
    checked = 0
    for para in _paragraph_starts(_source_help(path)):
        if len(para) < 150:
            continue
        head = para[: para.rfind(" ", 0, 150)]  # the first ~150 characters, which fit one 200-column line
        assert any(line[1:].startswith(head) for line in lines), f"not on one line at 200 columns: {head!r}\n{text}"
        checked += 1
    assert checked, "no paragraph long enough to check"


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_each_example_line_keeps_its_own_line(path):
    examples = [
        line for line in _source_help(path).splitlines() if line.startswith(("  ", "Example: ")) and line.strip()
    ]
    assert examples
    wide = _render(path, 200)
    for example in examples:
        assert " " + example.rstrip() in wide, example  # whole, on a line of its own
    narrow = _render(path, 80)
    for example in examples:  # at 80 columns a long one wraps, but it still starts its own line
        start = example.rstrip()[:70]
        start = start[: start.rfind(" ")] if len(example.rstrip()) > 70 else start
        assert any(line.startswith(" " + start) for line in narrow), example


def test_reflow_joins_prose_and_keeps_examples_lists_and_markers():
    text = (
        "First line\n  of the summary.\n\n"
        "A paragraph written\nhard-wrapped over\nthree lines.\n\n"
        "[bold]Examples[/]\n  ppt a --b \\\n    | ppt c\n  ppt d\n\n"
        "Items:\n- one\n  more of one\n- two\n\n"
        "\bkeep\nthese\n\fhidden\nlines"
    )
    out = reflow(text)
    paras = out.split("\n\n")
    assert paras[1] == "A paragraph written hard-wrapped over three lines."
    assert paras[2] == "[bold]Examples[/]\n  ppt a --b \\\n    | ppt c\n  ppt d"
    assert paras[3] == "Items:\n- one\n  more of one\n- two"
    assert paras[4].startswith("\bkeep\nthese") and paras[4].endswith("\fhidden\nlines")
    assert reflow(out) == out
    assert reflow(None) is None and reflow("") == ""


def _nofill_spans(page: str) -> tuple[list[str], list[str]]:
    """(lines inside .nf/.fi blocks, the other lines) of a roff page."""
    inside, outside, literal = [], [], False
    for line in page.splitlines():
        if line == ".nf":
            literal = True
        elif line == ".fi":
            literal = False
        else:
            (inside if literal else outside).append(line)
    return inside, outside


def test_man_page_fills_paragraphs_and_keeps_example_lines():
    from ppt.cli.docgen import render

    page = render()["man/ppt-sanitize.1"]
    inside, outside = _nofill_spans(page)
    # prose is filled text (man refills it to the reader's width), in source lines docgen keeps short
    assert all(len(line) <= 100 for line in outside), [line for line in outside if len(line) > 100]
    assert "Examples" in outside
    assert not any("Each record gets" in line for line in inside)
    # an example is one line of its own, as written, in no-fill mode
    example = next(line for line in _source_help(("sanitize",)).splitlines() if line.startswith("  cat "))
    assert example.replace("-", "\\-") in inside


@pytest.mark.skipif(shutil.which("man") is None, reason="needs man")
def test_man_page_prose_fits_80_columns(tmp_path):
    from ppt.cli.docgen import render

    page = tmp_path / "ppt-sanitize.1"
    page.write_text(render()["man/ppt-sanitize.1"])
    env = {**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "", "PAGER": "cat"}
    out = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True, env=env, check=False).stdout
    if not out.strip():
        pytest.skip("man rendered nothing here")
    lines = [re.sub(r".\x08", "", line).rstrip() for line in out.splitlines()]
    examples = {line.strip() for line in _source_help(("sanitize",)).splitlines() if line.startswith("  ")}
    prose = [line for line in lines if line.strip() and line.strip() not in examples]
    assert max(len(line) for line in prose) <= 80
    assert any("written only with --keep-original FIELD. Each record gets" in line for line in lines) or any(
        line.strip().startswith("only with --keep-original FIELD. Each record gets") for line in lines
    )
