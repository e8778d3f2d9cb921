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

from ppt.io import ExitCode, PptError

NAME = "dpopt-state.json"
LOCK = "dpopt.lock"
# what a saved state holds (ppt.dpopt.tune), and of which JSON types; "result" once the run finished
FIELDS: dict[str, type | tuple[type, ...]] = {
    "signature": dict,
    "key": str,
    "accountant": dict,
    "candidates": list,
    "current": (dict, type(None)),
    "generation_done": bool,
    "budget_stop": bool,
}


def lock(directory: str | os.PathLike):
    """Hold the checkpoint for one run: a second process on the same directory fails at once (exit 75)
    instead of spending the same budget again from the same state. Returns the held lock (release() it)."""
    from filelock import FileLock, Timeout

    d = _directory(directory)
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        held = FileLock(str(d / LOCK))
        held.acquire(timeout=0)
    except Timeout:  # before OSError: filelock's Timeout is a TimeoutError
        raise PptError(
            f"another run holds the checkpoint {d}",
            ExitCode.TEMPFAIL,
            hint="wait for it to finish, or use another --checkpoint directory",
        ) from None
    except OSError as e:
        raise PptError(
            f"cannot create or lock the checkpoint directory {d}: {e.strerror or type(e).__name__}", ExitCode.IOERR
        ) from None
    return held


def load(directory: str | os.PathLike | None) -> dict[str, Any] | None:
    """The saved state (None: no checkpoint yet). A state file that is not one (not JSON, not an object, a
    field missing or of the wrong type) is exit 65 naming the file, before any model loads."""
    if directory is None:
        return None
    p = _directory(directory) / NAME
    if not p.exists():
        return None
    try:
        state = json.loads(p.read_bytes())
    except OSError as e:
        raise PptError(f"cannot read the checkpoint {p}: {e.strerror or type(e).__name__}", ExitCode.NOINPUT) from None
    except ValueError:  # not JSON, or not UTF-8
        raise damaged(p, "not JSON") from None
    if not isinstance(state, dict):
        raise damaged(p, f"a JSON {type(state).__name__}, not an object")
    for field, types in FIELDS.items():
        if field not in state:
            raise damaged(p, f"no '{field}'")
        if not isinstance(state[field], types):
            raise damaged(p, f"'{field}' is of the wrong type")
    if not isinstance(state.get("result", {}), dict):
        raise damaged(p, "'result' is of the wrong type")
    try:
        bytes.fromhex(state["key"])
    except ValueError:
        raise damaged(p, "'key' is not hexadecimal") from None
    return state


def damaged(path: str | os.PathLike, what: str) -> PptError:
    """The error for a state file that cannot be resumed (``what``: how it is broken)."""
    return PptError(
        f"the checkpoint {path} is not a dp-opt state ({what})",
        ExitCode.DATAERR,
        hint="restore the file, or give a new --checkpoint directory (a new run spends a new budget)",
    )


def _directory(directory: str | os.PathLike) -> Path:
    """The checkpoint directory; a path naming a file is refused (exit 2) before anything is spent, not
    at the first save, after a query was paid."""
    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise PptError(
            f"the checkpoint {d} is a file, not a directory",
            ExitCode.USAGE,
            hint="give --checkpoint a new or existing directory (the state is kept in it)",
        )
    return d


def save(directory: str | os.PathLike, state: dict[str, Any]) -> None:
    d = _directory(directory)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = d / (NAME + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, d / NAME)
