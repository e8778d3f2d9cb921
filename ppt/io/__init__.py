"""I/O core: JSONL streaming, record validation, --on-error policy, exit codes, stamps, stdout hygiene.

args.py     StreamArgs, the shared stream options     records.py  Record, per-line validation
stream.py   run_stream, the runner                    sinks.py    stdout / atomic file output
stdout.py   stdout_guard, real_stdout                 errors.py, exitcodes.py, jsonl.py, stamp.py
"""

from ppt.io.args import StreamArgs
from ppt.io.errors import PptError, RecordError, Terminated
from ppt.io.exitcodes import ExitCode
from ppt.io.jsonl import dumps_line, iter_lines
from ppt.io.records import Record, parse_line
from ppt.io.sinks import open_output
from ppt.io.stamp import jsonable, stamp, stamp_block
from ppt.io.stdout import ensure_std_fds, error_stream, real_stdout, silence_stdout, stdout_guard
from ppt.io.stream import run_stream

__all__ = [
    "ExitCode",
    "PptError",
    "Record",
    "RecordError",
    "StreamArgs",
    "Terminated",
    "dumps_line",
    "ensure_std_fds",
    "error_stream",
    "iter_lines",
    "jsonable",
    "open_output",
    "parse_line",
    "real_stdout",
    "run_stream",
    "silence_stdout",
    "stamp",
    "stamp_block",
    "stdout_guard",
]
