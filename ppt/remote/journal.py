"""The resume journal of `ppt query --resume FILE`.

Every answered record is appended to FILE the moment its answer arrives (one JSONL line, flushed), so
a crash, a kill or a fatal endpoint error loses nothing that was paid for. On the next run the ids
found in FILE are not sent again: their saved records are emitted in place, so the output is complete
and in input order, but only when the saved answer's request digest (``ppt.query.request_sha256``) equals
the request this run would send; otherwise (input, model, template or options changed, or a record without
an id moved to another line) the record is sent again and its new answer journaled after the old one. FILE itself holds each answered id exactly once and is a valid output file.
Records are keyed by id (records without one by their input line), so ids must be unique: `ppt query`
stops with exit 65 at a repeated id before that batch sends anything.

A torn last line (the process died mid-write) is cut off when the journal is opened; lines that do
not parse or carry an ``error`` are ignored (those records are retried). Only one process may append
to a journal at a time (an exclusive lock; a second one fails at once with exit 75).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import Any

import orjson

from ppt.io import ExitCode, PptError, dumps_line, stamp_block
from ppt.io.jsonl import loads_exact, may_hold_big_int


def id_key(record_id: Any) -> bytes:
    """Journal key of a record id (``1`` and ``"1"`` differ; integers beyond 64 bits stay exact)."""
    try:
        return orjson.dumps(record_id, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits
        return json.dumps(record_id, sort_keys=True, separators=(",", ":")).encode()


def _loads(raw: bytes) -> Any:
    """A journaled line, big integers exact (as the stream reader parses input lines)."""
    return loads_exact(raw.decode("utf-8")) if may_hold_big_int(raw) else orjson.loads(raw)


def line_key(line_no: int) -> bytes:
    """Journal key of a record without an id: its 1-based input line (never equal to an id's key)."""
    return b"#line:%d" % line_no


def record_key(data: dict, id_field: str, line_no: int) -> bytes:
    """The key a record is journaled under: its id, or its line when it has none."""
    rid = data.get(id_field)
    return id_key(rid) if rid is not None else line_key(line_no)


def _as_key(key_or_id: Any) -> bytes:
    return key_or_id if isinstance(key_or_id, bytes) else id_key(key_or_id)


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
            raise PptError(
                f"resume journal {self.path} is in use by another process",
                ExitCode.TEMPFAIL,
                hint="wait for the other `ppt query` to finish, or use another --resume file",
            ) from None

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
            data = _loads(raw)
        except (orjson.JSONDecodeError, ValueError):
            return None
        if not isinstance(data, dict) or "error" in data or self.output_field not in data:
            return None
        if self.id_field in data and data[self.id_field] is not None:
            return id_key(data[self.id_field])
        line = (stamp_block(data, "query") or {}).get("line")
        return line_key(line) if isinstance(line, int) and not isinstance(line, bool) else None

    def __contains__(self, key_or_id: Any) -> bool:
        """``key_or_id``: a key from :func:`record_key` (bytes) or a record id."""
        return _as_key(key_or_id) in self.index

    def __len__(self) -> int:
        return len(self.index)

    def get(self, key_or_id: Any) -> dict:
        offset, length = self.index[_as_key(key_or_id)]
        with self._lock:
            data = os.pread(self.fd, length, offset)
        return _loads(data)

    def append(self, key_or_id: Any, record: dict, *, replace: bool = False) -> None:
        """Journal an answered record; a key already journaled is written again only with ``replace`` (the
        answer to a changed request: the later line wins when the journal is read)."""
        key = _as_key(key_or_id)
        line = dumps_line(record)
        with self._lock:
            if self.closed or (key in self.index and not replace):  # closed: never write to a reused fd
                return
            start = os.lseek(self.fd, 0, os.SEEK_END)
            view = memoryview(line)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
            self.index[key] = (start, len(line))
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
