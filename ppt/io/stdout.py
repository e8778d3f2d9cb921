"""Stdout hygiene: while library code runs, stray ``print`` output goes to stderr so stdout carries
only JSONL; the runner still reaches the real stdout through :func:`real_stdout`."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import IO

_REAL_STDOUT: list[IO[str]] = []


@contextlib.contextmanager
def stdout_guard() -> Iterator[None]:
    """Send Python-level ``print``/``sys.stdout`` writes to stderr while library code runs (model
    loading, progress chatter), so stdout carries nothing but JSONL. run_stream still writes to
    the real stdout, which is remembered here even when guards nest."""
    _REAL_STDOUT.append(sys.stdout)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _REAL_STDOUT.pop()


def real_stdout() -> IO[str]:
    """The stdout that was in place before the outermost active stdout_guard."""
    return _REAL_STDOUT[0] if _REAL_STDOUT else sys.stdout


def silence_stdout() -> None:
    """Point fd 1 at /dev/null so a closed pipe (`| head`) ends without a traceback on exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
