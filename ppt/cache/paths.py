"""Where the cache lives (``$PPT_CACHE`` or the user cache directory), what an OSError there means for
the user (exit 78, or 74 for a full disk), and directory sizes and ages."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from pathlib import Path

# errnos that mean "this cache cannot be written" (a configuration problem, exit 78) or "the disk is full" (74)
_UNWRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT}


def _cache_error(root: Path, exc: OSError, what: str) -> Exception:
    """The PptError (exit 78, or 74 for a full disk) for an OSError met while using the cache at ``root``."""
    from ppt.io.errors import PptError
    from ppt.io.exitcodes import ExitCode

    reason = exc.strerror or str(exc)
    if exc.errno is None:  # numpy and others raise errno-less OSErrors on short writes (a full disk)
        return PptError(
            f"ppt cache {root}: a write failed ({type(exc).__name__}): cannot {what}",
            exit_code=ExitCode.IOERR,
            hint="is the disk full? free space (`ppt cache ls`, `ppt cache rm ...`) or set PPT_CACHE to a bigger disk",
        )
    if exc.errno in _NO_SPACE:
        return PptError(
            f"ppt cache {root}: no space left on the device: cannot {what}",
            exit_code=ExitCode.IOERR,
            hint="free disk space (`ppt cache ls`, `ppt cache rm ...`) or set PPT_CACHE to a bigger disk",
        )
    if exc.errno in _UNWRITABLE:
        return PptError(
            f"ppt cache {root} is not writable ({reason}): cannot {what}",
            exit_code=ExitCode.CONFIG,
            hint="set PPT_CACHE to a writable directory, or build the artifacts into this cache first "
            "(`ppt precompute ...`) while it is writable; a read-only cache can only serve what it holds",
        )
    return PptError(
        f"ppt cache {root}: cannot {what} ({reason})",
        exit_code=ExitCode.CONFIG,
        hint="set PPT_CACHE to a writable directory",
    )


def _ensure_root(root: Path) -> Path:
    from ppt.io.errors import PptError
    from ppt.io.exitcodes import ExitCode

    if root.is_dir():
        return root
    hint = (
        "set PPT_CACHE to a directory ppt can create or use"
        if os.environ.get("PPT_CACHE")
        else "set PPT_CACHE to a directory ppt can create or use (the default is the user cache directory)"
    )
    if root.exists():
        raise PptError(f"PPT_CACHE={root} is not a directory", exit_code=ExitCode.CONFIG, hint=hint)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PptError(
            f"cannot create the ppt cache directory {root} ({e.strerror or e})", exit_code=ExitCode.CONFIG, hint=hint
        ) from None
    return root


def cache_dir() -> Path:
    """Root of the cache: ``$PPT_CACHE`` or the platform's user cache directory (created if absent).

    Raises PptError (exit 78) when it is not a directory or cannot be created."""
    env = os.environ.get("PPT_CACHE")
    if env:
        root = Path(env).expanduser()
    else:
        from platformdirs import user_cache_dir

        root = Path(user_cache_dir("ppt"))
    return _ensure_root(root)


def dir_size(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        with contextlib.suppress(OSError):
            if p.is_file():
                total += p.stat().st_size
    return total


def _age_s(path: Path) -> float:
    """Seconds since anything directly in ``path`` (or the directory itself) was last modified."""
    newest = 0.0
    with contextlib.suppress(OSError):
        newest = path.stat().st_mtime
        for p in path.iterdir():
            with contextlib.suppress(OSError):
                newest = max(newest, p.stat().st_mtime)
    return max(0.0, time.time() - newest)
