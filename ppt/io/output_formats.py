"""``-o out.jsonl.gz``, ``out.jsonl.zst``, ``out.csv``, ``out.parquet``: the records every stage writes, in the format
the name says, or the one ``--output-format`` names (stdout, a pipe, a file of any name).

Why a wrapper around the file sink: the stages write JSONL lines, whatever the target, and the file sink keeps
its promises (a temp file renamed at the end, the mode kept, no torn file). gzip and zstd compress as lines come. CSV
and Parquet need every record's columns first (records differ: an error record has other fields than a good
one), so lines are spooled to an unlinked temp file while each column's type is noted, then written in one
second pass of bounded batches: the union of the fields in first-seen order; nested values (the ``ppt`` stamp)
and columns whose values disagree in type as JSON text; numbers as int64 or float64, beyond int64 as text.
"""

from __future__ import annotations

import io
import os
import tempfile
import zlib
from collections.abc import Iterator
from typing import Any

import orjson

from ppt.io.errors import PptError
from ppt.io.exitcodes import ExitCode

BATCH_ROWS = 4096
INT64 = (-(2**63), 2**63 - 1)


class GzipSink:
    """JSONL compressed as it is written (gzip framing, readable by ``gzip -dc`` and ``-i out.jsonl.gz``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.z = zlib.compressobj(6, zlib.DEFLATED, 31)

    def write(self, data: bytes) -> None:
        out = self.z.compress(data)
        if out:
            self.inner.write(out)

    def commit(self) -> None:
        self.inner.write(self.z.flush())
        self.inner.commit()

    def abort(self) -> None:
        self.inner.abort()

    def silence(self) -> None:
        self.inner.silence()

    def mark_private(self) -> None:
        self.inner.mark_private()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if INT64[0] <= value <= INT64[1] else "json"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "json"


def _merge(a: str | None, b: str) -> str:
    if a is None or a == "null":
        return b
    if b == "null" or a == b:
        return a
    if {a, b} == {"int", "float"}:
        return "float"
    return "json"  # values of several kinds: each written as JSON text


class TableSink:
    """CSV or Parquet from JSONL lines: spooled, columns and types noted, written at commit."""

    def __init__(self, inner: Any, fmt: str, shown: str) -> None:
        self.inner, self.fmt, self.shown = inner, fmt, shown
        if fmt == "parquet":
            try:
                import pyarrow.parquet  # noqa: F401 - fail before any record is processed
            except ImportError:
                inner.abort()
                raise PptError(f"{shown}: writing Parquet needs pyarrow", ExitCode.CONFIG, hint="pip install pyarrow")
        self.spool = tempfile.TemporaryFile(dir=os.path.dirname(getattr(inner, "path", "")) or None)
        self.columns: dict[str, str | None] = {}  # name -> kind, in first-seen order
        self._tail = b""

    def write(self, data: bytes) -> None:
        self.spool.write(data)
        data, self._tail = self._tail + data, b""
        lines = data.split(b"\n")
        self._tail = lines.pop()
        for line in lines:
            if line:
                for key, value in orjson.loads(line).items():
                    self.columns[key] = _merge(self.columns.get(key), _kind(value))

    def _rows(self) -> Iterator[list[dict]]:
        self.spool.seek(0)
        batch: list[dict] = []
        for line in self.spool:
            if line.strip():
                batch.append(orjson.loads(line))
                if len(batch) >= BATCH_ROWS:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def _cell(self, value: Any, kind: str | None) -> Any:
        if value is None:
            return None
        if kind == "json":
            return orjson.dumps(value).decode()
        if kind == "float":
            return float(value)
        return value

    def commit(self) -> None:
        try:
            if self.fmt == "csv":
                self._write_csv()
            else:
                self._write_parquet()
        finally:
            self.spool.close()
        self.inner.commit()

    def _write_csv(self) -> None:
        import csv

        names = list(self.columns)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(names)
        for batch in self._rows():
            for row in batch:
                cells = []
                for name in names:
                    v = row.get(name)
                    kind = self.columns[name]
                    if v is None:
                        cells.append("")
                    elif kind in ("json",) or isinstance(v, (dict, list)):
                        cells.append(orjson.dumps(v).decode())
                    elif isinstance(v, bool):
                        cells.append("true" if v else "false")
                    else:
                        cells.append(v)
                writer.writerow(cells)
            self.inner.write(buf.getvalue().encode("utf-8"))
            buf.seek(0)
            buf.truncate()
        if buf.getvalue():
            self.inner.write(buf.getvalue().encode("utf-8"))

    def _write_parquet(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        types = {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(), "str": pa.string()}
        schema = pa.schema([(n, types.get(k or "str", pa.string())) for n, k in self.columns.items()])
        out = io.BytesIO()
        with pq.ParquetWriter(out, schema) as writer:
            for batch in self._rows():
                cols = {n: [self._cell(r.get(n), k) for r in batch] for n, k in self.columns.items()}
                writer.write_table(pa.table(cols, schema=schema))
                self.inner.write(out.getvalue())
                out.seek(0)
                out.truncate()
        self.inner.write(out.getvalue())

    def abort(self) -> None:
        self.spool.close()
        self.inner.abort()

    def silence(self) -> None:
        self.inner.silence()

    def mark_private(self) -> None:
        self.inner.mark_private()


class ZstdSink(GzipSink):
    """JSONL compressed with zstd as it is written (``zstd -dc``, ``-i out.jsonl.zst``): the zstandard package,
    or the standard library's from Python 3.14."""

    def __init__(self, inner: Any, shown: str) -> None:
        self.inner = inner
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+

            self.z = zstd.ZstdCompressor()
            self._end = zstd.ZstdCompressor.FLUSH_FRAME
        except ImportError:
            try:
                import zstandard
            except ImportError:
                inner.abort()
                raise PptError(
                    f"{shown}: cannot write jsonl.zst output without the zstandard package (or Python 3.14+)",
                    ExitCode.CONFIG,
                    hint="pip install zstandard, or write jsonl.gz; or pipe JSONL into zstd: ... | zstd > FILE",
                ) from None
            self.z = zstandard.ZstdCompressor().compressobj()
            self._end = None

    def commit(self) -> None:
        self.inner.write(self.z.flush() if self._end is None else self.z.flush(self._end))
        self.inner.commit()


BINARY = ("jsonl.gz", "jsonl.zst", "parquet")


def _terminal(sink: Any) -> bool:
    fd = getattr(sink, "fd", None)
    try:
        return fd is not None and os.isatty(fd)
    except OSError:
        return False


def formatted(sink: Any, fmt: str, shown: str) -> Any:
    """``sink`` (any sink of :mod:`ppt.io.sinks`) writing ``fmt``: JSONL as is, gzip, zstd, CSV or Parquet
    (PptError 2 for another format, or compressed/Parquet bytes bound for a terminal)."""
    if fmt == "jsonl":
        return sink
    if fmt in BINARY and _terminal(sink):
        sink.abort()
        raise PptError(
            f"{shown}: not writing {fmt} to a terminal",
            ExitCode.USAGE,
            hint="redirect it to a file (> out) or a pipe, or give -o FILE",
        )
    if fmt == "jsonl.gz":
        return GzipSink(sink)
    if fmt == "jsonl.zst":
        return ZstdSink(sink, shown)
    if fmt in ("csv", "parquet"):
        return TableSink(sink, fmt, shown)
    sink.abort()
    raise PptError(
        f"{shown}: cannot write {fmt} output",
        ExitCode.USAGE,
        hint="write jsonl, jsonl.gz, jsonl.zst, csv or parquet (--output-format, or -o's extension)",
    )


__all__ = ["GzipSink", "TableSink", "ZstdSink", "formatted"]
