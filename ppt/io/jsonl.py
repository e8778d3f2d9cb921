"""Low-level JSONL: bounded-memory line reading in binary and one-object-per-line writing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import orjson

from ppt.io.stamp import jsonable

_BOM = b"\xef\xbb\xbf"
_DUMP_OPTS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def iter_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_no, line)`` (1-based, newline and CR stripped) for non-blank lines.

    Reads one line at a time, so memory is bounded by the longest line, not the input. A UTF-8
    BOM on the first line is dropped; a last line without a newline is still yielded.
    """
    for line_no, raw in enumerate(stream, start=1):
        if line_no == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            continue
        yield line_no, raw


def dumps_line(obj: Any) -> bytes:
    """One JSONL line; non-finite floats become strings instead of orjson's silent null."""
    return orjson.dumps(jsonable(obj), option=_DUMP_OPTS) + b"\n"
