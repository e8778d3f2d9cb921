"""Library diagnostics: warnings through :mod:`warnings`, chatter through :mod:`logging`, formatted once.

The library never prints. It raises :class:`PptWarning` (or a subclass) with ``warnings.warn`` and logs
progress notes to the ``ppt`` logger; the CLI calls :func:`install_cli_handlers` once, which renders both
on stderr as ``ppt: warning: ...`` / ``ppt: note: ...``. A library user sees ordinary Python warnings and
can filter them (``warnings.simplefilter("ignore", PptWarning)``) or route them with logging.
"""

from __future__ import annotations

import logging
import sys
import warnings

logger = logging.getLogger("ppt")


class PptWarning(UserWarning):
    """Something the user should know about a run (weak parameters, a seeded run)."""


class LeakWarning(PptWarning):
    """A setting lets raw information through, outside the privacy accounting."""


def warn(message: str, category: type[PptWarning] = PptWarning) -> None:
    """Warn once per distinct message (the default filter), attributed to the caller's caller."""
    warnings.warn(message, category, stacklevel=3)


def note(message: str) -> None:
    """An informational line (``ppt: note: ...`` under the CLI)."""
    logger.info(message)


def _show(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    stream = file or sys.stderr
    if isinstance(category, type) and issubclass(category, PptWarning):
        text = f"ppt: warning: {message}"
    else:  # a third-party warning: keep its origin, but in one line
        text = f"ppt: warning: {category.__name__}: {message}"
    try:
        print(text, file=stream, flush=True)
    except (OSError, ValueError):
        pass


class _NoteFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        prefix = (
            "note" if record.levelno < logging.WARNING else "warning" if record.levelno < logging.ERROR else "error"
        )
        return f"ppt: {prefix}: {record.getMessage()}"


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted, not the stream of the first call (a
    program that runs the CLI more than once, or redirects stderr, still gets its notes)."""

    @property
    def stream(self):  # noqa: ANN201
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # noqa: ANN001 - StreamHandler.__init__ assigns it
        pass


def install_cli_handlers(quiet: bool = False) -> None:
    """Render library warnings and notes on stderr in the CLI's one format (idempotent)."""
    warnings.showwarning = _show
    warnings.simplefilter("default", PptWarning)
    if not any(getattr(h, "_ppt", False) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(_NoteFormatter())
        handler._ppt = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False
