"""The two error kinds: fatal (stop the run with an exit code) and per-record (apply --on-error)."""

from __future__ import annotations

from ppt.io.exitcodes import ExitCode


class PptError(Exception):
    """Fatal error: the CLI prints ``ppt: error: <message>`` (+ hint) and exits with ``exit_code``.

    Raise it before any record is read for bad options, so a run fails fast and loses nothing.
    """

    def __init__(self, message: str, exit_code: ExitCode = ExitCode.CONFIG, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = ExitCode(exit_code)
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class RecordError(Exception):
    """One record failed. ``type`` is a stable snake_case tag; ``message`` must never quote record
    text (it may be private): name the field or position, not the content."""

    def __init__(self, type: str, message: str) -> None:  # noqa: A002 - the contract names it `type`
        super().__init__(f"{type}: {message}")
        self.type = type
        self.message = message

    def __reduce__(self):  # pickles (worker processes send them back): rebuilt from (type, message)
        return (type(self), (self.type, self.message))

    def to_dict(self, line: int | None = None) -> dict:
        out: dict = {"type": self.type, "message": self.message}
        if line is not None:
            out["line"] = line
        return out


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived while run_stream ran (raised like KeyboardInterrupt for SIGINT, so
    cleanup runs); the CLI exits with 128 + ``signum``, as a shell reports a process killed by it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum
