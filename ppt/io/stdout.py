"""Stdout hygiene: while library code runs, stray ``print`` output goes to stderr so stdout carries
only JSONL; the runner still reaches the real stdout through :func:`real_stdout`.

Closed standard streams (``<&-``, ``>&-``, ``2>&-``): :func:`ensure_std_fds` (called once by the CLI at
start-up) points a closed fd 0/1/2 at /dev/null, so no file the run opens later can land on it and
receive stray writes; Python leaves ``sys.stdin``/``sys.stdout`` as None, which the runner reports as
exit 66/74, and a closed stderr becomes a sink that drops messages, so the run works without it.
A stderr that fails later (``2>/dev/full``, a read-only fd 2 left by a wrapper script, a closed pipe) is
wrapped in :class:`TolerantStream`: the first failed write silences it (fd 2 -> /dev/null), and every
message writer (warnings, logging, progress bars, rich tables, summaries) goes on as if it had printed;
stdout and the exit code are unaffected.
"""

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
        with contextlib.redirect_stdout(sys.stderr if sys.stderr is not None else _Discard()):
            yield
    finally:
        _REAL_STDOUT.pop()


def real_stdout() -> IO[str] | None:
    """The stdout that was in place before the outermost active stdout_guard (None: stdout is closed)."""
    return _REAL_STDOUT[0] if _REAL_STDOUT else sys.stdout


def silence_stdout() -> None:
    """Point fd 1 at /dev/null so a closed pipe (`| head`) ends without a traceback on exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class _Discard:
    """A text stream that drops what is written to it (stands in for a closed stderr)."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        return len(text)

    def writelines(self, lines) -> None:  # noqa: ANN001
        pass

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("stderr is closed")

    def close(self) -> None:
        pass


class TolerantStream:
    """stderr that never fails the run: a write or flush error (EBADF, ENOSPC, EPIPE, a closed file)
    points its fd at /dev/null, drains the buffer there and drops every later message."""

    def __init__(self, inner: IO[str]):
        self._inner = inner
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self._inner.write(text)
            except (OSError, ValueError):
                self._break()
        return len(text)

    def writelines(self, lines) -> None:  # noqa: ANN001
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._inner.flush()
            except (OSError, ValueError):
                self._break()

    def isatty(self) -> bool:
        try:
            return not self.broken and self._inner.isatty()
        except (OSError, ValueError):
            return False

    def _break(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            fd = self._inner.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        with contextlib.suppress(OSError, ValueError):
            self._inner.flush()  # what was buffered goes to /dev/null, not to a failing flush at exit

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def error_stream(stream: IO[str] | None = None) -> IO[str]:
    """``stream`` or sys.stderr, or a sink that drops messages when stderr is closed (``2>&-``)."""
    out = stream if stream is not None else sys.stderr
    return out if out is not None else _Discard()  # type: ignore[return-value]


def _fd_open(fd: int, write: bool = False) -> bool:
    """fd is open (and, with ``write``, open for writing: a wrapper script may leave a read-only file there)."""
    try:
        os.fstat(fd)
        if write:
            import fcntl

            return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY
    except OSError:
        return False
    return True


def ensure_std_fds() -> None:
    """Fill closed fds 0/1/2 (and a read-only fd 2) with /dev/null (idempotent), give a closed stderr a
    discarding stream and any other stderr a :class:`TolerantStream`.

    ``sys.stdin``/``sys.stdout`` stay None when they were closed at start-up, so ``-`` input/output
    is refused with exit 66/74 instead of reading or writing /dev/null silently."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        if _fd_open(fd, write=fd == 2):
            continue
        with contextlib.suppress(OSError):
            new = os.open(os.devnull, flags)
            if new != fd:
                os.dup2(new, fd)
                os.close(new)
    if sys.stderr is None:
        sys.stderr = _Discard()  # type: ignore[assignment]
    elif not isinstance(sys.stderr, (TolerantStream, _Discard)):
        sys.stderr = TolerantStream(sys.stderr)  # type: ignore[assignment]
