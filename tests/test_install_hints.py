"""Every `pip install` hint names ppt's own distribution (issue 36): `ppt` on the package index is another
project, so a hint reading `pip install 'ppt[detect]'` installs that one."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

from ppt import dist

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])


def _unroff(text: str) -> str:
    """A man page's text as a reader sees it: escapes undone, filled lines joined."""
    return text.replace("\\-", "-").replace("\\&", "").replace("\n", " ")


def _sources() -> dict[str, str]:
    files = [*sorted((ROOT / "ppt").rglob("*.py")), ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += [*sorted((ROOT / "man").glob("*.1")), *sorted((ROOT / "completions").glob("*"))]
    files += [*sorted((ROOT / "examples").glob("*.sh")), ROOT / ".ci" / "run"]
    out = {}
    for f in files:
        text = f.read_text(encoding="utf-8")
        out[str(f.relative_to(ROOT))] = _unroff(text) if f.suffix == ".1" else text
    return out


SOURCES = _sources()
# `pip install` and its arguments up to the end of the command (a shell operator, a closing quote of the
# prose around it, a comment, the end of the line)
COMMAND = re.compile(r"pip install\s+((?:[^\s&|;`#)]+\s*)+)")
WITH_EXTRAS = re.compile(r"""^['"]?([\w.\-/~]*?)\\*\[([\w,\-\\]*)\]""")


def test_the_distribution_is_the_one_pyproject_names():
    assert PYPROJECT["project"]["name"] == dist.DIST != "ppt"
    assert PYPROJECT["project"]["scripts"] == {"ppt": "ppt.cli.main:run"}  # the command stays `ppt`


def test_no_hint_names_the_other_projects_ppt():
    bad = []
    for path, text in SOURCES.items():
        bad += [(path, m.group(0)) for m in re.finditer(r"(?<![\w.\-/])ppt\\*\[[\w,\\]*\]", text)]
        bad += [(path, m.group(0)) for m in re.finditer(r"pip install\s+['\"]?ppt(?![\w-])", text)]
    assert not bad, f"ppt on the package index is another project; write {dist.DIST}[...] or -e '.[...]': {bad}"


def test_every_pip_install_with_extras_installs_this_project():
    bad = []
    for path, text in SOURCES.items():
        for cmd in COMMAND.finditer(text):
            for arg in cmd.group(1).split():
                m = WITH_EXTRAS.match(arg)
                if not m:
                    continue
                name, extras = m.group(1), {e.strip("\\ ") for e in m.group(2).split(",")}
                if not (name in (dist.DIST, ".") or name.startswith("/")) or not extras <= EXTRAS:
                    bad.append((path, cmd.group(0).strip()))
    assert not bad, f"not {dist.DIST} or -e '.', or an extra pyproject.toml lacks: {bad}"


def test_the_hints_at_run_time(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    assert dist.checkout() == ROOT
    assert dist.pip_install("readable") == "pip install -e '.[readable]'"
    assert dist.pip_install("a", "b") == "pip install -e '.[a,b]'"
    monkeypatch.chdir(tmp_path)  # elsewhere: the checkout's path
    assert dist.pip_install("readable") == f"pip install -e '{ROOT}[readable]'"
    monkeypatch.setattr(dist, "checkout", lambda: None)  # an installed wheel: the package index
    assert dist.pip_install("readable") == "pip install 'ppt-private-prompts[readable]'"
    assert dist.pip_install_static("readable", "ray") == "pip install 'ppt-private-prompts[readable,ray]'"
