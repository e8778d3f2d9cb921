"""Record schema and per-line validation: one JSON object per line, a text field and an id field."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from ppt.io.args import StreamArgs
from ppt.io.errors import RecordError
from ppt.io.fields import lookup
from ppt.io.jsonl import loads_exact, may_hold_big_int

ON_ERROR_MODES = ("fail", "skip", "record")


@dataclass
class Record:
    """A valid input line. ``data`` is the parsed object, passed through untouched; ``id`` is the
    id field's value, or the 0-based physical line number when missing/null (stable across runs: it
    keys seeded randomness and resume; error records write ``null`` instead, see BadLine)."""

    line_no: int
    id: Any
    data: dict
    text: str | None


@dataclass
class BadLine:
    """A line that failed validation (or processing): kept in its input position for ``record``.
    ``id`` is the record's own id field, or None when it has none (the error record says ``"id": null``
    and its line number, so it can never collide with a real id)."""

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
    try:
        text_line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BadLine(line_no, None, RecordError("invalid_utf8", f"invalid UTF-8 at byte {exc.start + 1}"))
    data = _loads(text_line, raw)
    if isinstance(data, RecordError):
        return BadLine(line_no, None, data)
    return parse_object(data, line_no, opts)


def parse_object(data: Any, line_no: int, opts: StreamArgs) -> Record | BadLine:
    """Validate one parsed record (a line's JSON value, or an object handed to the Python API): the same
    rules for both. Never raises for bad data."""
    if not isinstance(data, dict):
        return BadLine(line_no, None, RecordError("not_an_object", f"expected a JSON object, got {_type_name(data)}"))
    own_id = data.get(opts.id_field)
    rid = line_no - 1 if own_id is None else own_id
    ppt_block = data.get("ppt")
    if ppt_block is not None and not isinstance(ppt_block, dict):  # every stage stamps data["ppt"][stage]
        return BadLine(
            line_no, own_id, RecordError("ppt_field_conflict", "field 'ppt' exists and is not an object; rename it")
        )
    field = opts.text_field
    found, text = lookup(data, field)  # a dotted path reaches into nested objects (--text-field msg.body)
    if opts.require_text:
        if not found:
            return BadLine(line_no, own_id, RecordError("missing_text_field", f"missing text field '{field}'"))
        if not isinstance(text, str):
            return BadLine(
                line_no,
                own_id,
                RecordError("text_not_string", f"text field '{field}' is {_type_name(text)}, expected string"),
            )
        if not text.strip():
            return BadLine(line_no, own_id, RecordError("empty_text", f"text field '{field}' is empty"))
    elif not isinstance(text, str):
        text = None
    return Record(line_no=line_no, id=rid, data=data, text=text)


def _loads(text_line: str, raw: bytes) -> Any:
    """orjson, or the standard json module where a long digit run may be an integer beyond 64 bits
    (orjson would turn it into a float, or refuse it): big ids and pass-through numbers stay exact."""
    try:
        data = orjson.loads(text_line)
    except orjson.JSONDecodeError as exc:
        if not may_hold_big_int(raw):
            return RecordError("malformed_json", f"malformed JSON ({_json_problem(exc)})")
        problem = _json_problem(exc)
    else:
        if not may_hold_big_int(raw):
            return data
        problem = "number too long"  # orjson took it, json did not: an integer over Python's digit limit
    try:
        data = loads_exact(text_line)
    except (ValueError, RecursionError):
        return RecordError("malformed_json", f"malformed JSON ({problem})")
    if has_lone_surrogate(data):  # orjson refuses them; the standard json module does not
        return RecordError("invalid_utf8", "a string holds a lone surrogate escape (not valid UTF-8)")
    return data


def has_lone_surrogate(data: Any) -> bool:
    """Whether any key or string in ``data`` holds a lone UTF-16 surrogate (``"\\ud800"``): such a string
    cannot be written as UTF-8, so the record would fail later, at output, after its batch was processed."""
    import json

    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (TypeError, ValueError, RecursionError):
        return False
    return False
