"""Local input in other formats, read as the JSONL lines every stage takes: ``-i data.jsonl.gz``, ``data.csv``,
``data.parquet``, or any name or stdin with ``--input-format``. One record model for every format: a CSV row or
a Parquet row is the JSON object of its columns. Parquet and CSV stream through pyarrow (a dependency) one
batch at a time, so memory stays bounded by the batch, not the file.

Which format (``auto``, the default):

- a file whose name says it (``.jsonl``/``.json``/``.ndjson``, ``.gz``, ``.zst``, ``.csv``, ``.parquet``/``.pq``)
  is read as that, and a name that says a plain format over compressed or Parquet content (or the reverse)
  is refused naming both, never read as garbage line by line;
- a file whose name says nothing (``data.txt``, ``dump``), or stdin redirected from a file, is recognised by
  its first bytes: gzip, zstd and Parquet carry a signature; anything else is JSONL (CSV has none: name it);
- stdin from a pipe or a terminal is JSONL: its first bytes are not waited for (a pipeline's later stages load
  their models while the first one starts), so another format is named with ``--input-format``.

A declared format is checked against the file's signature the same way. Parquet keeps its index at the end
of the file: from a pipe it is first copied to an unlinked temporary file (``$TMPDIR``; as large as the
input), read after the stage is ready.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any

import orjson

from ppt.io.errors import PptError
from ppt.io.exitcodes import ExitCode

BATCH_ROWS = 4096
AUTO = "auto"
# the formats -i/-o take, as --input-format/--output-format name them
NAMES = ("jsonl", "jsonl.gz", "jsonl.zst", "csv", "parquet")
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
# the formats whose files start with a signature (JSONL and CSV have none)
MAGIC = {b"\x1f\x8b": "jsonl.gz", b"\x28\xb5\x2f\xfd": "jsonl.zst", b"PAR1": "parquet"}
SHOWN = {"jsonl.gz": "gzip-compressed", "jsonl.zst": "zstd-compressed", "parquet": "Parquet"}
HINT = "name the format: --input-format jsonl|jsonl.gz|jsonl.zst|csv|parquet (or give the file its extension)"


def named_format(path: str) -> str | None:
    """The format a path's name says, or None when its name says none of them."""
    lower = path.lower()
    for suffix, fmt in FORMATS.items():
        if lower.endswith(suffix):
            return fmt
    return None


def format_of(path: str) -> str:
    """The format a path's name says (``jsonl`` when it says nothing else)."""
    return named_format(path) or "jsonl"


def signature(head: bytes) -> str | None:
    """The format whose signature ``head`` (a file's first bytes) starts with, or None (JSONL, CSV, empty)."""
    for magic, fmt in MAGIC.items():
        if head.startswith(magic):
            return fmt
    return None


def check_format(fmt: str, flag: str = "--input-format") -> str:
    """``fmt`` if ppt reads and writes it (or ``auto``); PptError 2 otherwise (for library callers: the CLI's
    choices already refuse it)."""
    if fmt != AUTO and fmt not in NAMES:
        raise PptError(f"{flag}: unknown format {fmt!r}", ExitCode.USAGE, hint=f"use one of: auto, {', '.join(NAMES)}")
    return fmt


def _head(fd: int) -> bytes | None:
    """The next 4 bytes of a regular file's descriptor, without moving it; None for pipes and terminals."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.pread(fd, 4, os.lseek(fd, 0, os.SEEK_CUR))
    except (OSError, AttributeError):  # no pread (Windows), or not seekable
        return None


def _choose(shown: str, declared: str, head: bytes | None, by_name: str | None) -> str:
    """The format to read ``shown`` as, from the flag, the name and the first bytes (None: not known)."""
    declared = check_format(declared)
    found = signature(head) if head is not None else None
    if declared != AUTO:
        said, source = declared, "--input-format"
    elif by_name is not None:
        said, source = by_name, "its name"
    else:
        return found or "jsonl"
    if head is None or not head or found == said or (found is None and said not in MAGIC.values()):
        return said
    looks = SHOWN.get(found, "") if found else "plain text (JSONL or CSV)"
    raise PptError(
        f"cannot read {shown} as {said}: {source} says {said}, but its content is {looks}"
        + (f" ({found})" if found else ""),
        ExitCode.NOINPUT,
        hint=HINT,
    )


def input_format(path: str, declared: str = AUTO) -> str:
    """The format ``-i path`` is read as (see the module doc); PptError 66 naming both when the flag or the
    name disagrees with the content."""
    head = None
    try:
        if stat.S_ISREG(os.stat(path).st_mode):  # never a FIFO or /dev/fd/N: reading would consume it
            with open(path, "rb") as f:
                head = f.read(4)
    except OSError:
        pass  # opening it later says why
    return _choose(path, declared, head, named_format(path))


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


def _zstd_reader(raw: IO[bytes], closefd: bool) -> IO[bytes]:
    import io

    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+

        return zstd.ZstdFile(raw, "rb")
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise PptError(
            "reading jsonl.zst needs the zstandard package (or Python 3.14+)",
            ExitCode.NOINPUT,
            hint="pip install zstandard, or decompress it: zstd -dc FILE | ppt ...",
        ) from None
    return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=closefd))


def _reader(source: Any, fmt: str, shown: str, closefd: bool) -> Any:
    """``source`` (a path, or a binary stream that is not ours to close) read as ``fmt``, as JSONL lines."""
    if fmt == "jsonl.gz":
        import gzip

        return gzip.open(source, "rb")  # a stream: gzip leaves it open when closed
    if fmt == "jsonl.zst":
        raw = open(source, "rb") if isinstance(source, str) else source  # noqa: SIM115 - closed with the reader
        return _zstd_reader(raw, closefd)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(source)
        return _Lines(_rows_as_lines(pf.iter_batches(batch_size=BATCH_ROWS)), pf)
    if fmt == "csv":
        import pyarrow.csv as pacsv

        reader = pacsv.open_csv(source, read_options=pacsv.ReadOptions(block_size=1 << 20))
        return _Lines(_rows_as_lines(reader), reader)
    return open(source, "rb") if isinstance(source, str) else source  # noqa: SIM115 - closed by run_stream


def _cannot(shown: str, fmt: str, e: BaseException) -> PptError:
    # pyarrow's and the decompressors' errors are many: name the format and the error type, never the content
    return PptError(f"cannot read {shown} as {fmt} ({type(e).__name__})", ExitCode.NOINPUT, hint=HINT)


def open_formatted(path: str, fmt: str = AUTO) -> Any:
    """``path`` opened as JSONL lines in format ``fmt`` (``auto``: see the module doc); PptError 66 naming the
    format when it cannot be read as that (at open, or later: a truncated gzip file). A FIFO or /dev/fd/N
    (``-i <(zcat x.gz)``) is read as a pipe: see :func:`open_stream`."""
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        special = False  # opening it says why
    if special:
        return open_stream(open(path, "rb"), fmt, path, by_name=named_format(path), owned=True)  # noqa: SIM115
    fmt = input_format(path, fmt)
    try:
        reader = _reader(path, fmt, path, closefd=True)
    except PptError:
        raise
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise  # open_input says which
    except Exception as e:  # noqa: BLE001
        raise _cannot(path, fmt, e) from None
    return reader if fmt == "jsonl" else _Guarded(lambda: reader, path, fmt)


class _Guarded:
    """JSONL lines from a reader of another format, made on first use when ``make`` opens it (a pipe is then
    not read before the stage is ready: a pipeline's stages load their models side by side). A failure while
    reading is PptError 66 naming the format, never a traceback or the content. No ``fileno()``: the runner
    reads it as a file, not as a pipe that can stall."""

    def __init__(self, make: Callable[[], Any], shown: str, fmt: str, owned: Any = None) -> None:
        self._make, self._shown, self._fmt, self._owned = make, shown, fmt, owned
        self._inner: Any = None

    def _lines(self) -> Iterator[bytes]:
        try:
            self._inner = self._make()
            yield from self._inner
        except PptError:
            raise
        except Exception as e:  # noqa: BLE001 - gzip's BadGzipFile and EOFError, pyarrow's ArrowInvalid, ...
            raise _cannot(self._shown, self._fmt, e) from None

    def __iter__(self) -> Iterator[bytes]:
        return self._lines()

    def close(self) -> None:
        try:
            if self._inner is not None:
                self._inner.close()
        finally:
            if self._owned is not None:  # the stream under the reader, when it is ours (a FIFO we opened)
                self._owned.close()


class _Spooled:
    """A pipe's Parquet: copied into an unlinked temporary file (0600, in $TMPDIR) on first use and read from
    there (Parquet's index is at the end of the file); the copy goes when it is closed."""

    def __init__(self, stream: IO[bytes], shown: str) -> None:
        self.stream, self.shown = stream, shown
        self.tmp: Any = None
        self.reader: Any = None

    def __iter__(self) -> Iterator[bytes]:
        import shutil
        import tempfile

        self.tmp = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        shutil.copyfileobj(self.stream, self.tmp, 1 << 20)
        self.tmp.seek(0)
        self.reader = _reader(self.tmp, "parquet", self.shown, closefd=False)
        return iter(self.reader)

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
        if self.tmp is not None:
            self.tmp.close()


def open_stream(
    stream: IO[bytes], fmt: str = AUTO, shown: str = "stdin", *, by_name: str | None = None, owned: bool = False
) -> Any:
    """A binary stream (stdin, a FIFO) as JSONL lines in format ``fmt``. ``auto``: the signature of a regular
    file behind it, else what its name says (``by_name``), else JSONL (a pipe is not waited on here). Nothing
    is read from it before the lines are; closing the result closes the stream only when ``owned``."""
    fd = None
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        pass
    head = _head(fd) if fd is not None else None
    declared = fmt
    fmt = _choose(shown, fmt, head, by_name)
    if fmt == "jsonl":
        if declared == AUTO and by_name is None and head is None:
            return _Sniffing(stream, shown, owned)
        return stream
    if fmt == "parquet":
        seekable = head is not None or (fd is None and _seekable(stream))
        if not seekable:
            return _Guarded(lambda: _Spooled(stream, shown), shown, fmt, stream if owned else None)
    return _Guarded(lambda: _reader(stream, fmt, shown, closefd=False), shown, fmt, stream if owned else None)


class _Sniffing:
    """A pipe read as JSONL (``auto``), whose first bytes are checked as they arrive (never waited for before
    the stage is ready): compressed or Parquet data is PptError 66 naming its format and the flag that reads
    it, instead of an "invalid UTF-8" error per line. Otherwise the stream itself, to the same reads (the
    runner's stall-aware reader uses ``fileno`` and ``read1``); closing it leaves the stream open."""

    def __init__(self, stream: IO[bytes], shown: str, owned: bool = False) -> None:
        self._stream, self._shown, self._owned, self._checked = stream, shown, owned, False

    def _check(self, data: bytes) -> bytes:
        if not self._checked and data:
            self._checked = True
            found = signature(data)
            if found is not None:
                raise PptError(
                    f"{self._shown} holds {SHOWN[found]} data ({found}), but a pipe is read as JSONL unless "
                    "--input-format names its format",
                    ExitCode.NOINPUT,
                    hint=f"pass --input-format {found}",
                )
        return data

    def fileno(self) -> int:
        return self._stream.fileno()

    def read1(self, size: int = -1) -> bytes:
        return self._check(self._stream.read1(size))  # type: ignore[attr-defined]

    def read(self, size: int = -1) -> bytes:
        return self._check(self._stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._check(self._stream.readline(size))

    def __iter__(self) -> Iterator[bytes]:
        for line in self._stream:
            yield self._check(line)

    def close(self) -> None:
        if self._owned:  # a FIFO we opened; stdin is not ours to close
            self._stream.close()


def _seekable(stream: Any) -> bool:
    try:
        return bool(stream.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def open_input(path: str, fmt: str = AUTO, stdin: IO[bytes] | None = None) -> tuple[Any, bool]:
    """``-i PATH`` (``-``: stdin, or ``stdin`` when given) as JSONL lines, and whether the caller closes it.
    PptError 66 for a closed stdin, a directory, a missing or unreadable file, or one not in its format."""
    if stdin is not None or path == "-":
        if stdin is None:
            if sys.stdin is None:  # started with `<&-`
                raise PptError("stdin is closed", ExitCode.NOINPUT, hint="give a file with -i, or pipe JSONL in")
            stdin = sys.stdin.buffer
        src = open_stream(stdin, fmt)
        return src, src is not stdin
    if os.path.isdir(path):
        raise PptError(
            f"input path is a directory: {path}", ExitCode.NOINPUT, hint="give a JSONL file, or '-' for stdin"
        )
    try:
        return open_formatted(path, fmt), True
    except FileNotFoundError:
        raise PptError(
            f"input file not found: {path}", ExitCode.NOINPUT, hint="check the path, or pass '-' to read stdin"
        ) from None
    except OSError as exc:
        raise PptError(f"cannot read input {path}: {exc.strerror}", ExitCode.NOINPUT) from None


__all__ = [
    "AUTO",
    "FORMATS",
    "NAMES",
    "check_format",
    "format_of",
    "input_format",
    "named_format",
    "open_formatted",
    "open_input",
    "open_stream",
    "signature",
]
