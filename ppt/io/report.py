"""What a stream run says on stderr: counts by error type, the first failed lines, the fatal error.

Why apart: the local driver (:mod:`ppt.io.stream`) and the cluster driver (:mod:`ppt.exec.ray`) must
word a run the same way, so users and tests read one format whatever the engine. Messages name line
numbers and error types, never record text.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from typing import IO, Any

MAX_LINES_SHOWN = 5
HINT = "  hint: use --on-error skip or --on-error record to continue past bad records"


class RunReport:
    """Counts of one run and the lines that report them (a failing stderr never fails the run)."""

    def __init__(self, opts: Any, desc: str, err: IO[str]) -> None:
        self.opts, self.desc, self.err = opts, desc, err
        self.ok = 0
        self.failed: Counter[str] = Counter()
        self.failed_lines: list[int] = []
        self.stopped: dict[str, Any] | None = None  # where --on-error fail stopped the run (--report)
        self.started = time.monotonic()

    def say(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.err.write(text + "\n")
            self.err.flush()

    def count_failure(self, line_no: int, etype: str) -> None:
        self.failed[etype] += 1
        if len(self.failed_lines) <= MAX_LINES_SHOWN:
            self.failed_lines.append(line_no)

    def fatal(self, line_no: int, etype: str, message: str) -> None:
        self.stopped = {"line": line_no, "type": etype}
        self.say(f"ppt: error: line {line_no}: {message}")
        self.say(HINT)
        if not self.opts.quiet:
            self.say(f"ppt: {self.desc}: stopped at line {line_no} ({etype}) after {self.ok} ok")

    def summary(self) -> None:
        if self.opts.quiet:
            return
        line = f"ppt: {self.desc}: {self.ok} ok"
        n_failed = sum(self.failed.values())
        if n_failed:
            verb = "skipped" if self.opts.on_error == "skip" else "failed (recorded in output)"
            kinds = ", ".join(f"{k} x{v}" for k, v in self.failed.most_common())
            lines = ", ".join(str(n) for n in self.failed_lines[:MAX_LINES_SHOWN])
            more = ", ..." if n_failed > MAX_LINES_SHOWN else ""
            word = "line" if n_failed == 1 else "lines"
            line += f", {n_failed} {verb}: {kinds} ({word} {lines}{more})"
        elapsed = time.monotonic() - self.started
        done = self.ok + n_failed
        rate = f", {done / elapsed:,.0f} records/s" if elapsed > 0 and done else ""
        self.say(f"{line} in {elapsed:.1f} s{rate}")


__all__ = ["HINT", "MAX_LINES_SHOWN", "RunReport"]
