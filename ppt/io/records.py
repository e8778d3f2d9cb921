"""Record schema and per-line validation: one JSON object per line, a text field and an id field."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from ppt.io.args import StreamArgs
from ppt.io.errors import RecordError

ON_ERROR_MODES = ("fail", "skip", "record")


@dataclass
class Record:
    """A valid input line. ``data`` is the parsed object, passed through untouched; ``id`` is the
    id field's value, or the 0-based physical line number when missing/null (stable across runs)."""

    line_no: int
    id: Any
    data: dict
    text: str | None


@dataclass
class BadLine:
    """A line that failed validation (or processing): kept in its input position for ``record``."""

    line_no: int
    id: Any
    error: RecordError


_SAFE_MSG = re.compile(r"[A-Za-z][A-Za-z ,:'-]{0,79}")


def _json_problem(exc: orjson.JSONDecodeError) -> str:
    """orjson's messages are fixed phrases, but only pass one on if it looks like one, so no
    fragment of the (possibly private) line can ever reach a log."""
    msg = getattr(exc, "msg", "") or ""
    if not _SAFE_MSG.fullmatch(msg):
        msg = "invalid JSON"
    col = getattr(exc, "colno", None)
    return f"{msg} at column {col}" if isinstance(col, int) else msg


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__
    )


def parse_line(raw: bytes, line_no: int, opts: StreamArgs) -> Record | BadLine:
    """Validate one non-blank line (without its newline). Never raises for bad data."""
    index = line_no - 1
    try:
        text_line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BadLine(line_no, index, RecordError("invalid_utf8", f"invalid UTF-8 at byte {exc.start + 1}"))
    try:
        data = orjson.loads(text_line)
    except orjson.JSONDecodeError as exc:
        return BadLine(line_no, index, RecordError("malformed_json", f"malformed JSON ({_json_problem(exc)})"))
    if not isinstance(data, dict):
        return BadLine(
            line_no, index, RecordError("not_an_object", f"expected a JSON object, got {_type_name(data)}")
        )
    rid = data.get(opts.id_field)
    if rid is None:
        rid = index
    field = opts.text_field
    text = data.get(field)
    if opts.require_text:
        if field not in data:
            return BadLine(line_no, rid, RecordError("missing_text_field", f"missing text field '{field}'"))
        if not isinstance(text, str):
            return BadLine(
                line_no,
                rid,
                RecordError("text_not_string", f"text field '{field}' is {_type_name(text)}, expected string"),
            )
        if not text.strip():
            return BadLine(line_no, rid, RecordError("empty_text", f"text field '{field}' is empty"))
    elif not isinstance(text, str):
        text = None
    return Record(line_no=line_no, id=rid, data=data, text=text)
