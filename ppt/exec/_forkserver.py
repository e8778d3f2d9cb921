"""Imported first by the fork server of :mod:`ppt.exec.pool` (its preload), never elsewhere.

The server (and every worker forked from it) lets go of the driving process's stdin and stdout at once,
so a reader of ppt's stdout sees end-of-file when ppt exits, not when the server has finished its
imports. A worker whose driving process is gone before the worker has started (a run that ended while
its workers were still starting) exits without a traceback: it has nothing left to do or report.
"""

from __future__ import annotations

import contextlib
import os
import sys

with contextlib.suppress(OSError):
    _null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(_null, 0)
    os.close(_null)
with contextlib.suppress(OSError):
    os.dup2(2, 1)

_DRIVER = os.getppid()  # the process that started this fork server
_default_hook = sys.excepthook


def _driver_gone() -> bool:
    """Whether the driving process has exited (a zombie waiting for its parent counts as exited)."""
    try:
        with open(f"/proc/{_DRIVER}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return True
    except OSError:  # no /proc: ask the kernel whether the pid exists
        try:
            os.kill(_DRIVER, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
    return False


def _hook(kind, value, tb) -> None:
    if _driver_gone():
        return
    _default_hook(kind, value, tb)


sys.excepthook = _hook
