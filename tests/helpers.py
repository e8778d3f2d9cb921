"""Plain helpers shared by test modules (fixtures live in conftest.py): running the real ``ppt``
executable, skipping on missing packaged models, and a deterministic test mechanism.

Import as ``from tests.helpers import ...``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import ClassVar

import pytest

from ppt.mechanisms import Policy, TokenMechanism

# prompts of the LM tests (tests/lm): plain text and chat messages, short and long
LM_PROMPTS = [
    "The quick brown fox",
    [{"role": "user", "content": "Please summarize this note about a payment and a due date."}],
    "A",
    "Your task is to extend the Prefix Text. Use the Perturbed Generation as your primary material.",
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "The clinic is open."}],
]
# the one launcher of the real CLI in tests: its module under this interpreter (never a `ppt` from PATH,
# which may be another install)
PPT = [sys.executable, "-m", "ppt.cli.main"]


def untimed(stderr: str) -> str:
    """A run's stderr without the end-of-run timing (" in 0.1 s, 713 records/s"), for comparing two runs."""
    import re

    return re.sub(r" in \d+\.\d s(, [\d,]+ records/s)?$", "", stderr, flags=re.M)


def shell_env(**extra: str) -> dict:
    """The environment for shell scripts that call `ppt` (README blocks, examples/*.sh): this interpreter's
    scripts directory first on PATH, so their `ppt` is this checkout's install, never another one."""
    from pathlib import Path

    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, **extra}


def ppt(
    *args: str, stdin: str = "", timeout: float = 600, env: dict | None = None, cwd=None
) -> subprocess.CompletedProcess:
    """Run ``ppt ARGS`` in this process (typer's CliRunner; ``ppt.testing.cli``) with ``stdin`` as input; text
    stdout/stderr captured, never raises on exit codes. Use :func:`ppt_process` where the real process is the
    contract (pipes, fds, signals, start-up, tracebacks)."""
    from ppt.testing.cli import run_cli

    return run_cli(args, stdin=stdin, env=env, cwd=cwd)


def ppt_process(
    *args: str, stdin: str = "", timeout: float = 600, env: dict | None = None, cwd=None
) -> subprocess.CompletedProcess:
    """Run ``ppt ARGS`` in a subprocess with ``stdin`` as input; text stdout/stderr captured, never raises on exit codes."""
    return subprocess.run(
        [*PPT, *args],
        check=False,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else {**os.environ, **env},
        cwd=cwd,
    )


# ---------------------------------------------------------------------------------- packaged models


def installed(alias: str) -> bool:
    from ppt.models import registry
    from ppt.models.catalog import OFFLINE

    return registry.is_installed(OFFLINE[alias])


def needs(alias: str):
    """Skip unless the packaged model ``alias`` is installed."""
    return pytest.mark.skipif(not installed(alias), reason=f"{alias} not installed (ppt models install {alias})")


# a fake carrier package on sys.path (the fake_asset fixture in tests/models/conftest.py)
FAKE_TOP = "ppt_fake_carrier_pkg"


# ---------------------------------------------------------------------------------- mechanisms


class ShiftMech(TokenMechanism):
    """Deterministic test mechanism: every perturbed row r becomes (r + shift) % V."""

    name: ClassVar[str] = "shift"
    notion: ClassVar[str] = "none (test)"
    default_policy: ClassVar[Policy] = Policy(oov="drop", stopwords="perturb")

    def __init__(self, space, shift: int = 1, **kw):
        self.shift = shift
        super().__init__(eps=1.0, space=space, **kw)

    def params(self):
        return {"shift": self.shift, "space": self.space.name}

    def draw(self, n, g):
        return {"u": g.random(n)}

    def perturb_rows(self, rows, rand):
        return (rows + self.shift) % self.space.size, {}
