"""Low-level JSONL: bounded-memory line reading in binary and one-object-per-line writing.

Integers outside orjson's 64-bit range (ids, pass-through fields) stay exact: a line that holds a long
digit run is parsed with the standard ``json`` module (as strictly as orjson: no NaN/Infinity), and an
object orjson cannot write is written by ``json`` with the same compact separators.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import stat
from collections.abc import Iterator
from typing import IO, Any

import orjson

from ppt.io.stamp import jsonable

_BOM = b"\xef\xbb\xbf"
_DUMP_OPTS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
_CHUNK = 1 << 16
STALL_GRACE_S = 0.02  # how long a pipe may pause before the records read so far are processed


def open_side_file(path: str, what: str = "") -> IO[bytes]:
    """A side file (corpus, pairs, vectors) opened for reading in binary; one that cannot be opened is
    exit 66 (NOINPUT) naming the path."""
    from ppt.io.errors import PptError
    from ppt.io.exitcodes import ExitCode

    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except OSError as e:
        raise PptError(f"cannot read {what + ' ' if what else ''}{path}: {e.strerror or e}", ExitCode.NOINPUT) from None


def read_file_lines(path: str, what: str = "") -> list[bytes]:
    """A whole (small) side file's lines (:func:`open_side_file`'s errors)."""
    with open_side_file(path, what) as fh:
        return fh.read().splitlines()


def read_objects(lines: Any, where: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a side file (a corpus, training pairs, vectors),
    not the record stream: a line that is not a JSON object is a data error (exit 65) that names
    ``where`` and the line number, never the line's content."""
    from ppt.io.errors import PptError
    from ppt.io.exitcodes import ExitCode

    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise PptError(f"{where}: line {n} is not JSON", ExitCode.DATAERR) from None
        if not isinstance(rec, dict):
            raise PptError(f"{where}: line {n} is not a JSON object", ExitCode.DATAERR)
        yield n, rec


def _clean(line_no: int, raw: bytes) -> bytes | None:
    if line_no == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw if raw.strip() else None


def iter_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_no, line)`` (1-based, newline and CR stripped) for non-blank lines.

    Reads one line at a time, so memory is bounded by the longest line, not the input. A UTF-8
    BOM on the first line is dropped; a last line without a newline is still yielded.
    """
    for line_no, raw in enumerate(stream, start=1):
        line = _clean(line_no, raw)
        if line is not None:
            yield line_no, line


def is_interactive(stream: Any) -> bool:
    """Whether ``stream`` is a pipe, terminal or socket (it can stall), not a regular file or a buffer."""
    try:
        fd = stream.fileno()
        return not stat.S_ISREG(os.fstat(fd).st_mode) and callable(getattr(stream, "read1", None))
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is an OSError
        return False


def iter_lines_interactive(stream: IO[bytes], grace: float = STALL_GRACE_S) -> Iterator[tuple[int, bytes] | None]:
    """Like :func:`iter_lines` for a pipe or terminal, but yields ``None`` when the input stalls (no
    complete line buffered and nothing more readable within ``grace`` seconds), so the caller can
    process what it has (``tail -f log | ppt ...``). Data that is ready never causes a stall, so a
    fast producer still fills whole batches. Memory is bounded by the longest line plus one chunk."""
    fd = stream.fileno()
    buf = bytearray()
    pos = 0
    line_no = 0
    fresh = False  # a line was yielded since the last stall
    scanned = 0  # buf[pos:scanned] holds no newline (a long line is not rescanned per chunk)
    while True:
        nl = buf.find(b"\n", max(pos, scanned))
        if nl >= 0:
            line_no += 1
            line = _clean(line_no, bytes(buf[pos : nl + 1]))
            pos = nl + 1
            if line is not None:
                fresh = True
                yield line_no, line
            continue
        del buf[:pos]
        pos, scanned = 0, len(buf)
        if fresh and not _readable(fd, grace):
            fresh = False
            yield None
        chunk = stream.read1(_CHUNK)  # type: ignore[attr-defined]  # drains the reader's own buffer first
        if not chunk:
            if buf:
                line_no += 1
                line = _clean(line_no, bytes(buf))
                if line is not None:
                    yield line_no, line
            return
        buf += chunk


def _readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` has data (or EOF) within ``timeout`` seconds; poll() has no FD_SETSIZE limit."""
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    except (AttributeError, OSError, ValueError):  # no poll() (Windows): select()
        try:
            return bool(select.select([fd], [], [], timeout)[0])
        except (OSError, ValueError):
            return True  # cannot tell: never stall


# ------------------------------------------------------------------------------------ values

_LONG_DIGITS = re.compile(rb"\d{19}")  # orjson holds integers in 64 bits: 19+ digits may not fit


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number is infinity when parsed as double")
    return value


def may_hold_big_int(raw: bytes) -> bool:
    return _LONG_DIGITS.search(raw) is not None


def loads_exact(text: str) -> Any:
    """Parse with the standard ``json`` module: integers of any size exact, NaN/Infinity rejected."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)


def _default(obj: Any) -> Any:
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if hasattr(obj, "value"):  # enum
        return obj.value
    return str(obj)


def dumps_line(obj: Any) -> bytes:
    """One JSONL line; non-finite floats become strings instead of orjson's silent null; integers
    beyond 64 bits are written exactly (through the standard json module)."""
    value = jsonable(obj)
    try:
        return orjson.dumps(value, option=_DUMP_OPTS) + b"\n"
    except orjson.JSONEncodeError as exc:
        if "64-bit" not in str(exc):
            raise
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default)
    return text.encode("utf-8", "surrogatepass") + b"\n"
