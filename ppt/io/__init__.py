"""I/O core: JSONL streaming, record validation, --on-error policy, exit codes, stamps, stdout hygiene."""

from ppt.io.errors import PptError, RecordError
from ppt.io.exitcodes import ExitCode
from ppt.io.jsonl import dumps_line, iter_lines
from ppt.io.records import Record, StreamOptions, parse_line
from ppt.io.stamp import jsonable, stamp
from ppt.io.stream import real_stdout, run_stream, stdout_guard

__all__ = [
    "ExitCode",
    "PptError",
    "Record",
    "RecordError",
    "StreamOptions",
    "dumps_line",
    "iter_lines",
    "jsonable",
    "parse_line",
    "real_stdout",
    "run_stream",
    "stamp",
    "stdout_guard",
]
