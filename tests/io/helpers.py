"""In-memory run_stream helpers shared by the ppt.io tests."""

from __future__ import annotations

import io

import orjson

from ppt.io import Record, StreamArgs, run_stream


def upper(batch: list[Record]) -> list[dict]:
    return [{**r.data, "text": r.text.upper(), "rid": r.id} for r in batch]


def run(data: bytes, fn=upper, **kw) -> tuple[int, list[dict], str]:
    """Run run_stream over in-memory streams; return (exit code, parsed output lines, stderr)."""
    out, err = io.BytesIO(), io.StringIO()
    opts = StreamArgs(**kw)
    code = run_stream(opts, fn, desc="test", _stdin=io.BytesIO(data), _stdout=out, _stderr=err)
    lines = out.getvalue().splitlines()
    return code, [orjson.loads(x) for x in lines], err.getvalue()


def jl(*objs) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)
