"""Checkpoints of a tuning run: one JSON file written atomically (0600: it holds the subset key and
generated text), updated after every query, so a resumed run continues from the last released token and
never forgets a query it already paid for."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

NAME = "dpopt-state.json"


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
