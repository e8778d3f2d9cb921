"""Build locks: one file lock per key serializes builders; a lock is probed without being created, so a
read-only cache can be inspected."""

from __future__ import annotations

import os
from pathlib import Path

from filelock import FileLock, Timeout

STALE_ROOT_BUILD_S = 3600  # build dirs in the cache root have no lock: stale after an hour untouched

__all__ = ["STALE_ROOT_BUILD_S", "FileLock", "Timeout", "_lock_held"]


def _lock_held(lock_path: Path) -> bool:
    """Whether a live process holds the build lock at ``lock_path`` (probed without creating or writing it)."""
    import fcntl

    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return False  # no lock file: no builder ever took it (or it was removed)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
