"""Local input in other formats, read as the JSONL lines every stage takes: ``-i data.jsonl.gz``, ``data.csv``,
``data.parquet`` (detected from the name). One record model for every format: a CSV row or a Parquet row is
the JSON object of its columns. Parquet and CSV stream through pyarrow (a dependency) one batch at a time, so
memory stays bounded by the batch, not the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import orjson

from ppt.io.errors import PptError
from ppt.io.exitcodes import ExitCode

BATCH_ROWS = 4096
FORMATS = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".gz": "jsonl.gz",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".zst": "jsonl.zst",
}


def format_of(path: str) -> str:
    """The format a path's name says (``jsonl`` when it says nothing else)."""
    lower = path.lower()
    for suffix, fmt in FORMATS.items():
        if lower.endswith(suffix):
            return fmt
    return "jsonl"


class _Lines:
    """An iterable of JSONL lines with ``close()`` (what the stream reader needs from an input)."""

    def __init__(self, lines: Iterator[bytes], closer: Any = None) -> None:
        self._lines, self._closer = lines, closer

    def __iter__(self) -> Iterator[bytes]:
        return self._lines

    def close(self) -> None:
        close = getattr(self._lines, "close", None)
        if close is not None:
            close()
        if self._closer is not None:
            self._closer.close()


def _rows_as_lines(batches: Iterator[Any]) -> Iterator[bytes]:
    from ppt.io.jsonl import dumps_line

    for batch in batches:
        for row in batch.to_pylist():
            stamp = row.get("ppt")
            if isinstance(stamp, str) and stamp.startswith("{"):  # ppt's own stamp, written as JSON text by -o
                try:
                    row["ppt"] = orjson.loads(stamp)
                except orjson.JSONDecodeError:
                    pass
            yield dumps_line(row)


def open_formatted(path: str) -> IO[bytes] | _Lines:
    """``path`` opened as JSONL lines, whatever its format (PptError 66 naming the format when it cannot be read)."""
    fmt = format_of(path)
    try:
        if fmt == "jsonl.gz":
            import gzip

            return gzip.open(path, "rb")
        if fmt == "jsonl.zst":
            try:
                import zstandard
            except ImportError:
                raise PptError(
                    f"{path}: reading .zst needs the zstandard package",
                    ExitCode.NOINPUT,
                    hint="pip install zstandard, or decompress it: zstd -dc FILE | ppt ...",
                ) from None
            import io

            raw = open(path, "rb")  # noqa: SIM115 - closed with the reader
            return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            return _Lines(_rows_as_lines(pf.iter_batches(batch_size=BATCH_ROWS)), pf)
        if fmt == "csv":
            import pyarrow.csv as pacsv

            reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=1 << 20))
            return _Lines(_rows_as_lines(reader), reader)
    except PptError:
        raise
    except FileNotFoundError:
        raise PptError(f"input file not found: {path}", ExitCode.NOINPUT) from None
    except Exception as e:  # noqa: BLE001 - pyarrow's errors are many; name the format, never the content
        raise PptError(
            f"cannot read {path} as {fmt} ({type(e).__name__})",
            ExitCode.NOINPUT,
            hint="the format comes from the file name: .jsonl, .jsonl.gz, .csv, .parquet",
        ) from None
    return open(path, "rb")  # noqa: SIM115 - closed by run_stream


__all__ = ["FORMATS", "format_of", "open_formatted"]
