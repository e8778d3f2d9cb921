"""Run the ``ppt`` CLI in this process (typer's CliRunner) with the result shape of ``subprocess.run``.

Why: a subprocess pays Python start-up and the torch import (about 1.5 s) for every call, and most tests
check what the command writes and returns, not the process. Pipes, signals, fds and exit codes of a real
process stay subprocesses in the tests that check them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path


@contextlib.contextmanager
def _cwd(path: str | os.PathLike | None) -> Iterator[None]:
    if path is None:
        yield
        return
    before = os.getcwd()
    os.chdir(Path(path))
    try:
        yield
    finally:
        os.chdir(before)


def run_cli(
    args: Sequence[str],
    stdin: str | bytes = "",
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
) -> subprocess.CompletedProcess:
    """``ppt ARGS`` in-process: returncode, text stdout and stderr (an uncaught exception re-raises, so a
    test sees the traceback a real process would print)."""
    import signal

    from typer.testing import CliRunner

    from ppt.cli.main import app

    handlers = {
        s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", signal.SIGTERM))
    }
    runner = CliRunner()
    try:
        with _cwd(cwd):
            result = runner.invoke(app, list(args), input=stdin, env=dict(env) if env else None, catch_exceptions=False)
    finally:
        for sig, handler in handlers.items():  # a command may install its own; the test process keeps its own
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, handler)
    return subprocess.CompletedProcess(["ppt", *args], result.exit_code, result.stdout, result.stderr)
