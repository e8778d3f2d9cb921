"""Progress bars that never touch stdout: stderr only, and only when stderr is a terminal."""

from __future__ import annotations

import contextlib
import os
import sys
import time

from tqdm import tqdm

_RUN_QUIET = False  # this run's --quiet (set by the CLI for every invocation): no library bars either


def set_run_quiet(quiet: bool) -> None:
    """Record this run's --quiet, so code that never sees the flag (model loads) keeps quiet too."""
    global _RUN_QUIET
    _RUN_QUIET = bool(quiet)


def run_quiet() -> bool:
    return _RUN_QUIET or bool(os.environ.get("PPT_QUIET"))


def progress_enabled(quiet: bool = False) -> bool:
    if quiet or run_quiet():
        return False
    return sys.stderr.isatty() or bool(os.environ.get("PPT_PROGRESS"))


def progress_bar(total: int | None, desc: str, quiet: bool = False, unit: str = "it") -> tqdm:
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not progress_enabled(quiet), leave=False)


def stage_enabled(quiet: bool = False) -> bool:
    """Stage lines: on unless ``--quiet`` (or PPT_QUIET), TTY or not (a first run's minutes of building
    must not look like a hang in a CI log or a pipeline)."""
    return not (quiet or run_quiet())


def _disk_size(path) -> int:
    from pathlib import Path

    p = Path(path)
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else 0


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover


@contextlib.contextmanager
def stage(what: str, quiet: bool = False, path=None):
    """One stderr line when a slow stage starts and one when it ends (how long, and how big ``path`` is on
    disk): ``ppt: building space x ...`` / ``ppt: building space x: done, 17.2 MB on disk, 12.3 s``."""
    if not stage_enabled(quiet):
        yield
        return
    start = time.monotonic()
    print(f"ppt: {what} ...", file=sys.stderr, flush=True)
    yield
    size = f", {_human(_disk_size(path))} on disk" if path is not None else ""
    print(f"ppt: {what}: done{size}, {time.monotonic() - start:.1f} s", file=sys.stderr, flush=True)
