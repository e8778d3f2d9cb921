"""Process exit codes (sysexits-style), so shell scripts can tell bad data from a dead endpoint."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    SOME_FAILED = 1  # some records failed (skip/record modes), or a processing failure under fail
    USAGE = 2  # bad command line (typer/click uses 2 as well)
    DATAERR = 65  # malformed input data (fail mode)
    NOINPUT = 66  # input file missing or unreadable
    UNAVAILABLE = 69  # remote endpoint unavailable
    IOERR = 74  # cannot write output / read input
    TEMPFAIL = 75  # retries exhausted
    CONFIG = 78  # bad configuration: options, missing artifact, model not found offline
