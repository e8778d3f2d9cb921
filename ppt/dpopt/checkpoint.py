"""Checkpoints of a tuning run: one JSON file written atomically (0600: it holds the subset key and
generated text), updated after every query, so a resumed run continues from the last released token and
never forgets a query it already paid for. A finished run records its result (the private selection
included) before anything is written elsewhere; rerunning it returns that result instead of selecting again,
and one run at a time holds the directory (:func:`lock`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

NAME = "dpopt-state.json"
LOCK = "dpopt.lock"


def lock(directory: str | os.PathLike):
    """Hold the checkpoint for one run: a second process on the same directory fails at once (exit 75)
    instead of spending the same budget again from the same state. Returns the held lock (release() it)."""
    from filelock import FileLock, Timeout

    from ppt.io import ExitCode, PptError

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    held = FileLock(str(d / LOCK))
    try:
        held.acquire(timeout=0)
    except Timeout:
        raise PptError(
            f"another run holds the checkpoint {d}",
            ExitCode.TEMPFAIL,
            hint="wait for it to finish, or use another --checkpoint directory",
        ) from None
    return held


def load(directory: str | os.PathLike | None) -> dict[str, Any] | None:
    if directory is None:
        return None
    p = Path(directory) / NAME
    if not p.is_file():
        return None
    return json.loads(p.read_text())


def save(directory: str | os.PathLike, state: dict[str, Any]) -> None:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = d / (NAME + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, d / NAME)
