"""The worker half of :mod:`ppt.exec.ray`: what Ray runs on the cluster's workers for ``--engine ray``.

Apart from the driver because it runs elsewhere: the read tasks that count and number each shard's lines
(JSONL or Parquet), and the actor that builds the stage once and maps batches of raw lines to one result
row each (status, output line, error), parsed and validated as ``run_stream`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any

from ppt.exec.readonly import read_only_cache
from ppt.io import Record, RecordError, StreamArgs, dumps_line, parse_line, stdout_guard
from ppt.io.jsonl import iter_lines
from ppt.io.records import BadLine
from ppt.stages.base import Stage

OK, BAD_INPUT, FAILED = 0, 1, 2  # per-row status: ok, invalid input line (65 under fail), stage error (1)


# ------------------------------------------------------------------------------------ reading (workers)


def _open(path: str) -> IO[bytes]:
    if "://" in path:
        from pyarrow import fs

        filesystem, inner = fs.FileSystem.from_uri(path)
        return filesystem.open_input_stream(inner)
    return open(path, "rb")


def count_rows(path: str, fmt: str) -> int:
    """Physical lines of a JSONL shard (as ``iter_lines`` numbers them) or rows of a Parquet shard."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        with _open(path) as f:
            return pq.ParquetFile(f).metadata.num_rows
    n, last = 0, b"\n"
    with _open(path) as f:
        while chunk := f.read(1 << 22):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def shard_rows(path: str, fmt: str, shard: int, start: int) -> Iterator[dict[str, Any]]:
    """One row per non-blank line (JSONL) or per row (Parquet, as a JSON line), numbered from ``start``."""
    if fmt == "parquet":
        import orjson
        import pyarrow.parquet as pq

        with _open(path) as f:
            n = start
            for batch in pq.ParquetFile(f).iter_batches():
                for row in batch.to_pylist():
                    n += 1
                    try:
                        yield {"shard": shard, "line_no": n, "raw": orjson.dumps(row), "bad": ""}
                    except TypeError:
                        yield {
                            "shard": shard,
                            "line_no": n,
                            "raw": b"",
                            "bad": "a column holds a value JSON cannot represent",
                        }
        return
    with _open(path) as f:
        for line_no, raw in iter_lines(f):
            yield {"shard": shard, "line_no": start + line_no, "raw": raw, "bad": ""}


def _count_row(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "rows": count_rows(row["path"], row["fmt"])}


def _read_row(row: dict[str, Any]) -> Iterator[dict[str, Any]]:
    return shard_rows(row["path"], row["fmt"], int(row["shard"]), int(row["start"]))


# ------------------------------------------------------------------------------------ the stage (actors)


class StageActor:
    """A Ray Data callable class: builds the stage once per actor (cache read-only), then maps batches of
    raw lines to one result row each (status, output line, error type and message)."""

    def __init__(self, make_stage: Callable[[], Stage], opts: StreamArgs, build_hint: str | None = None) -> None:
        with stdout_guard(), read_only_cache(build_hint):
            self.stage = make_stage()
            self.stage.prepare()
        self.opts = opts

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        items: list[Record | BadLine] = []
        for raw, line_no, bad in zip(batch["raw"], batch["line_no"], batch["bad"]):
            if bad:
                items.append(BadLine(int(line_no), None, RecordError("unsupported_value", str(bad))))
            else:
                items.append(parse_line(bytes(raw), int(line_no), self.opts))
        records = [x for x in items if isinstance(x, Record)]
        results: list[Any] = []
        if records:
            with stdout_guard():
                try:
                    results = list(self.stage(records))
                except RecordError as exc:  # a whole-batch failure applies to each record
                    results = [exc] * len(records)
            if len(results) != len(records):
                raise RuntimeError(f"the stage returned {len(results)} results for {len(records)} records")
        status, out, etype, emsg = [], [], [], []
        it = iter(results)
        for item in items:
            if isinstance(item, Record):
                res = next(it)
                if not isinstance(res, RecordError):
                    status.append(OK), out.append(dumps_line(res)), etype.append(""), emsg.append("")
                    continue
                item, code = BadLine(item.line_no, item.data.get(self.opts.id_field), res), FAILED
            else:
                code = BAD_INPUT
            status.append(code)
            out.append(dumps_line({self.opts.id_field: item.id, "error": item.error.to_dict(item.line_no)}))
            etype.append(item.error.type)
            emsg.append(item.error.message)
        return {
            "shard": np.asarray(batch["shard"]),
            "line_no": np.asarray(batch["line_no"]),
            "status": np.asarray(status, dtype=np.int8),
            "out": np.asarray(out, dtype=object),
            "etype": np.asarray(etype, dtype=object),
            "emsg": np.asarray(emsg, dtype=object),
        }


__all__ = ["BAD_INPUT", "FAILED", "OK", "StageActor", "count_rows", "shard_rows"]
