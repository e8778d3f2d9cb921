"""Output sinks of run_stream: a stream (stdout, flushed per batch, silenced after EPIPE) or a file
(written to a temp file beside the target and renamed at the end, so readers never see a torn file)."""

from __future__ import annotations

import contextlib
import io
import os
import uuid
from typing import IO, Any

from ppt.io.errors import PptError
from ppt.io.exitcodes import ExitCode
from ppt.io.stdout import real_stdout



class Sink:
    """Where JSONL goes. ``commit`` makes the output visible; ``abort`` discards it (file output)."""

    def write(self, data: bytes) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def silence(self) -> None:
        pass


class _StreamSink(Sink):
    def __init__(self, stream: Any, is_stdout: bool) -> None:
        if hasattr(stream, "buffer"):  # a text stream such as sys.stdout: write its bytes layer
            self.buffer, self.text = stream.buffer, None
        elif isinstance(stream, io.TextIOBase):
            self.buffer, self.text = None, stream
        else:  # a binary stream passed directly
            self.buffer, self.text = stream, None
        self.is_stdout = is_stdout

    def write(self, data: bytes) -> None:
        if self.buffer is not None:
            self.buffer.write(data)
            self.buffer.flush()
        else:
            self.text.write(data.decode("utf-8"))
            self.text.flush()

    def commit(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            (self.buffer or self.text).flush()

    def silence(self) -> None:
        """After EPIPE: point fd 1 at /dev/null so the interpreter's final flush cannot fail."""
        if not self.is_stdout:
            return
        try:
            fd = (self.buffer or self.text).fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass


class _FileSink(Sink):
    """Write to a temp file beside the target and rename at the end: readers never see a torn file."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        if os.path.isdir(self.path):
            raise PptError(f"output path is a directory: {path}", ExitCode.IOERR, hint="give a file name with -o")
        directory, name = os.path.split(self.path)
        if not os.path.isdir(directory):
            raise PptError(
                f"output directory does not exist: {directory}", ExitCode.IOERR, hint="create it first"
            )
        self.tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise PptError(f"cannot write output {path}: {exc.strerror}", ExitCode.IOERR) from None
        self.fh = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.fh.flush()

    def commit(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.fh.close()
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)


def open_output(path: str, stdout: IO[bytes] | None) -> Sink:
    if stdout is not None:
        return _StreamSink(stdout, is_stdout=False)
    if path == "-":
        return _StreamSink(real_stdout(), is_stdout=True)
    return _FileSink(path)
