"""The resume journal of `ppt query --resume FILE`.

Every answered record is appended to FILE the moment its answer arrives (one JSONL line, flushed), so
a crash, a kill or a fatal endpoint error loses nothing that was paid for. On the next run the ids
found in FILE are not sent again: their saved records are emitted in place, so the output is complete
and in input order. FILE itself holds each answered id exactly once and is a valid output file.

A torn last line (the process died mid-write) is cut off when the journal is opened; lines that do
not parse or carry an ``error`` are ignored (those records are retried). Only one process may append
to a journal at a time (an exclusive lock; a second one fails at once with exit 75).
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

import orjson

from ppt.io import ExitCode, PptError, dumps_line


def id_key(record_id: Any) -> bytes:
    """Journal key of a record id (``1`` and ``"1"`` differ)."""
    return orjson.dumps(record_id, option=orjson.OPT_SORT_KEYS)


class Journal:
    def __init__(self, path: str, id_field: str, output_field: str) -> None:
        self.path, self.id_field, self.output_field = path, id_field, output_field
        self._lock = threading.Lock()
        self.index: dict[bytes, tuple[int, int]] = {}
        self.ignored = 0
        self.appended = 0
        self.closed = False
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as e:
            raise PptError(f"cannot open resume journal {path}: {e.strerror}", ExitCode.IOERR) from None
        self._lock_file()
        self._load()

    def _lock_file(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock
            return
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            raise PptError(f"resume journal {self.path} is in use by another process", ExitCode.TEMPFAIL,
                           hint="wait for the other `ppt query` to finish, or use another --resume file") from None

    def _load(self) -> None:
        size = os.fstat(self.fd).st_size
        offset = 0
        with open(self.path, "rb") as fh:
            for raw in fh:
                start, offset = offset, offset + len(raw)
                if not raw.endswith(b"\n"):  # torn tail from a killed run: drop it
                    os.ftruncate(self.fd, start)
                    self.ignored += 1
                    break
                key = self._key_of(raw)
                if key is None:
                    self.ignored += int(bool(raw.strip()))
                    continue
                self.index[key] = (start, len(raw))
        assert offset <= size

    def _key_of(self, raw: bytes) -> bytes | None:
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(data, dict) or "error" in data or self.output_field not in data:
            return None
        if self.id_field in data and data[self.id_field] is not None:
            return id_key(data[self.id_field])
        line = (data.get("ppt") or {}).get("query", {}).get("line") if isinstance(data.get("ppt"), dict) else None
        return id_key(line - 1) if isinstance(line, int) else None

    def __contains__(self, record_id: Any) -> bool:
        return id_key(record_id) in self.index

    def __len__(self) -> int:
        return len(self.index)

    def get(self, record_id: Any) -> dict:
        offset, length = self.index[id_key(record_id)]
        with self._lock:
            data = os.pread(self.fd, length, offset)
        return orjson.loads(data)

    def append(self, record_id: Any, record: dict) -> None:
        line = dumps_line(record)
        with self._lock:
            if self.closed:  # a late answer after shutdown: never write to a closed (maybe reused) fd
                return
            start = os.lseek(self.fd, 0, os.SEEK_END)
            view = memoryview(line)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
            self.index[id_key(record_id)] = (start, len(line))
            self.appended += 1

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            with contextlib.suppress(OSError):
                os.fsync(self.fd)
            with contextlib.suppress(OSError):
                os.close(self.fd)
