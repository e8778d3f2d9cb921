"""Progress bars that never touch stdout: stderr only, and only when stderr is a terminal."""

from __future__ import annotations

import os
import sys

from tqdm import tqdm


def progress_enabled(quiet: bool = False) -> bool:
    if quiet or os.environ.get("PPT_QUIET"):
        return False
    return sys.stderr.isatty() or bool(os.environ.get("PPT_PROGRESS"))


def progress_bar(total: int | None, desc: str, quiet: bool = False, unit: str = "it") -> tqdm:
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not progress_enabled(quiet), leave=False)
