"""Imported first by the fork server of :mod:`ppt.exec.pool` (its preload), never elsewhere: the server
(and every worker forked from it) lets go of the driving process's stdin and stdout at once, so a
reader of ppt's stdout sees end-of-file when ppt exits, not when the server has finished its imports."""

from __future__ import annotations

import contextlib
import os

with contextlib.suppress(OSError):
    _null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(_null, 0)
    os.close(_null)
with contextlib.suppress(OSError):
    os.dup2(2, 1)
