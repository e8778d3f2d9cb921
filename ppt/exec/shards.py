"""Input and output shards of a cluster run, kept free of any engine so their rules are tested without one.

Inputs are read in sorted path order and numbered as one stream, as ``cat`` would feed them to a local
run (each shard ending with a newline): a record without an id gets the same line-based id, and an
error names the same line, whichever engine ran it. Output shard ``part-NNNNN.jsonl`` holds the results
of input shard NNNNN in input order, so the shards concatenated equal the local run's output.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ppt.io import ExitCode, PptError

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
PARQUET_SUFFIXES = (".parquet", ".pq")
SUMMARY_NAME = "summary.json"
_PART_RE = re.compile(r"part-\d{5,}\.jsonl")
# what a run killed before its commit leaves: ShardWriter's temp shards (mkstemp: the shard's name after a
# dot, then 8 random characters) and the summary's temp file (ppt.exec.ray)
_TEMP_RE = re.compile(r"\.part-\d{5,}\.jsonl\.[a-z0-9_]{8}|\." + re.escape(SUMMARY_NAME) + r"\.tmp")
_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class InputShard:
    index: int
    path: str
    fmt: str  # "jsonl" | "parquet"


def shard_format(path: str) -> str:
    """Parquet for .parquet/.pq, JSONL for everything else."""
    return "parquet" if path.lower().endswith(PARQUET_SUFFIXES) else "jsonl"


def output_name(index: int, n_shards: int = 1) -> str:
    """The output shard of input shard ``index`` of ``n_shards``: zero-padded to 5 digits, or more when a
    run has more shards, so the names of one run sort in input order (``cat part-*`` is the output)."""
    width = max(5, len(str(max(n_shards, index + 1) - 1)))
    return f"part-{index:0{width}d}.jsonl"


def _is_uri(spec: str) -> bool:
    return "://" in spec and not spec.startswith("file://")


def _data_files(names: list[str]) -> list[str]:
    return sorted(
        n
        for n in names
        if n.lower().endswith(JSONL_SUFFIXES + PARQUET_SUFFIXES) and not os.path.basename(n).startswith((".", "_"))
    )


def resolve_inputs(spec: str) -> list[InputShard]:
    """The input shards named by a file, a directory (its .jsonl/.ndjson/.json/.parquet files), a glob, or
    a URI (``s3://bucket/dir/``, a file or a directory; no globs) through pyarrow's filesystems; sorted
    by path. Stdin is refused: a cluster reads files its workers can open."""
    if spec in ("", "-"):
        raise PptError(
            "--engine ray reads files, not stdin",
            ExitCode.USAGE,
            hint="give --input a file, a directory or a glob such as 'data/*.jsonl'",
        )
    spec = spec.removeprefix("file://")
    if _is_uri(spec):
        paths = _resolve_uri(spec)
    elif _GLOB_CHARS.search(spec):
        paths = sorted(p for p in glob.glob(os.path.expanduser(spec)) if os.path.isfile(p))
    elif os.path.isdir(spec):
        paths = [os.path.join(spec, n) for n in _data_files(os.listdir(spec)) if os.path.isfile(os.path.join(spec, n))]
    elif os.path.isfile(spec):
        paths = [spec]
    else:
        raise PptError(f"input not found: {spec}", ExitCode.NOINPUT, hint="give a file, a directory or a glob")
    if not paths:
        raise PptError(
            f"no input files in {spec}",
            ExitCode.NOINPUT,
            hint="a directory is read for *.jsonl, *.ndjson, *.json and *.parquet files",
        )
    return [InputShard(i, p, shard_format(p)) for i, p in enumerate(paths)]


def _resolve_uri(spec: str) -> list[str]:
    if _GLOB_CHARS.search(spec):
        raise PptError("globs are not supported on URIs", ExitCode.USAGE, hint="give the directory instead")
    from pyarrow import fs

    try:
        filesystem, path = fs.FileSystem.from_uri(spec)
        info = filesystem.get_file_info(path)
        if info.type == fs.FileType.Directory:
            infos = filesystem.get_file_info(fs.FileSelector(path, recursive=False))
            scheme = spec.split("://", 1)[0]
            return [f"{scheme}://{p}" for p in _data_files([i.path for i in infos if i.type == fs.FileType.File])]
        if info.type == fs.FileType.File:
            return [spec]
    except (OSError, ValueError) as e:
        raise PptError(f"cannot list input {spec} ({type(e).__name__})", ExitCode.NOINPUT) from None
    raise PptError(f"input not found: {spec}", ExitCode.NOINPUT)


def prepare_output_dir(path: str) -> Path:
    """The output directory, created if absent. It must be empty or hold only a previous run's shards and
    summary (which this run replaces): other files are never overwritten. The temp files of a run that
    was killed before its commit are removed, with a note on stderr."""
    if path in ("", "-"):
        raise PptError(
            "--engine ray writes a directory of shards, not stdout",
            ExitCode.USAGE,
            hint="give --output a directory, e.g. -o private/",
        )
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise PptError(f"--output must be a directory with --engine ray: {path}", ExitCode.USAGE)
    if out.is_dir():
        _remove_leftovers(out)
        foreign = [p.name for p in out.iterdir() if not (_PART_RE.fullmatch(p.name) or p.name == SUMMARY_NAME)]
        if foreign:
            raise PptError(
                f"output directory {path} holds files this run did not write ({len(foreign)})",
                ExitCode.CONFIG,
                hint="give an empty or new directory",
            )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PptError(f"cannot create output directory {path}: {e.strerror}", ExitCode.IOERR) from None
    return out


def _remove_leftovers(out: Path) -> None:
    """Remove the temp files a killed run left in ``out`` (every later run refused the directory, 78)."""
    from ppt.log import note

    left = sorted(p for p in out.iterdir() if _TEMP_RE.fullmatch(p.name) and p.is_file())
    for p in left:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    if left:
        note(f"removed {len(left)} temp file(s) an interrupted run left in {out} ({', '.join(p.name for p in left)})")


class ShardWriter:
    """Writes each output shard to a temp file beside it; ``commit()`` renames them all into place (an
    input shard with no output gets an empty one) and removes a previous run's extra shards;
    ``abort()`` removes the temp files. ``private``: new files are 0600."""

    def __init__(self, directory: Path, n_shards: int, *, private: bool = False) -> None:
        self.dir, self.n, self.private = directory, n_shards, private
        self._files: dict[int, tuple[int, str]] = {}

    def _fd(self, index: int) -> int:
        if index not in self._files:
            fd, tmp = tempfile.mkstemp(prefix=f".{output_name(index, self.n)}.", dir=self.dir)
            if not self.private:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)
            self._files[index] = (fd, tmp)
        return self._files[index][0]

    def mark_private(self) -> None:
        """A record holds raw values (:func:`ppt.io.stream.reveals_raw`): every shard, written or to come, 0600."""
        self.private = True
        for fd, _ in self._files.values():
            os.fchmod(fd, 0o600)

    def write(self, index: int, data: bytes) -> None:
        if not data:
            return
        fd = self._fd(index)
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError as e:
            raise PptError(f"cannot write output: {e.strerror or e}", ExitCode.IOERR) from None

    def commit(self) -> list[str]:
        names = []
        for index in range(self.n):
            self._fd(index)  # an input shard with no output still gets its (empty) shard
            fd, tmp = self._files.pop(index)
            os.fsync(fd)
            os.close(fd)
            os.replace(tmp, self.dir / output_name(index, self.n))
            names.append(output_name(index, self.n))
        keep = set(names)
        for p in self.dir.iterdir():
            if _PART_RE.fullmatch(p.name) and p.name not in keep:
                p.unlink()
        return names

    def abort(self) -> None:
        for fd, tmp in self._files.values():
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._files.clear()
