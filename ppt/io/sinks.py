"""Output sinks of run_stream: where ``-o`` goes, without ever destroying what it names.

    -            stdout (flushed per write, silenced after EPIPE; closed stdout -> exit 74)
    /dev/fd/N    /dev/stdout, /dev/stderr, /proc/self/fd/N: the inherited descriptor N itself (dup'ed),
                 so `-o >(gzip > x.gz)`, `-o /dev/stdout | wc` and `-o /dev/stdout >> log` all work
    device/FIFO  an existing character/block device, FIFO or socket path: opened and written through
    symlink     written through to its target (the link stays a link; a dangling link's target is created)
    file        a regular file (or a new one): written to a 0600 temp file beside it and renamed over it
                 when the run ends, so readers never see a torn file. The final file keeps an existing
                 file's mode (and owner, where allowed); a new file is 0600 when ``private`` (the run
                 writes raw text or what reveals it: --keep-original, --emit-alignment, diagnostics),
                 else 0666 & ~umask. When the directory is not writable but the file is, the file is
                 written in place (not atomic, like the shell's `>`).

``abort()`` removes the temp file; run_stream calls it on any exception, including the ones its
SIGTERM/SIGHUP handlers raise, so an interrupted run leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import stat
import sys
import uuid
from typing import IO, Any

from ppt.io.errors import PptError, Terminated
from ppt.io.exitcodes import ExitCode
from ppt.io.stdout import _Discard, real_stdout


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

    def mark_private(self) -> None:
        """The output turned out to hold raw text (a record carries a --keep-original or alignment
        field): a new file is created 0600. The mode is applied at commit, so this may come late."""


def write_whole_lines(fd: int, data: bytes) -> None:
    """``data`` (whole JSONL lines) to ``fd``; a signal that stops the write mid-line (SIGTERM, Ctrl-C while a
    slow reader holds the pipe back) first lets the line in hand finish, so the reader never sees a torn last
    line. A second signal while finishing gives up at once."""
    view, done = memoryview(data), 0
    try:
        while done < len(data):
            done += os.write(fd, view[done:])
    except (KeyboardInterrupt, Terminated):
        end = data.find(b"\n", done)
        if done and data[done - 1 : done] != b"\n" and end >= 0:
            with contextlib.suppress(KeyboardInterrupt, Terminated, OSError):
                while done <= end:
                    done += os.write(fd, view[done : end + 1])
        raise


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


class _StreamSink(Sink):
    def __init__(self, stream: Any, is_stdout: bool) -> None:
        if hasattr(stream, "buffer"):  # a text stream such as sys.stdout: write its bytes layer
            self.buffer, self.text = stream.buffer, None
        elif isinstance(stream, io.TextIOBase):
            self.buffer, self.text = None, stream
        else:  # a binary stream passed directly
            self.buffer, self.text = stream, None
        self.is_stdout = is_stdout
        self.fd = _fileno(self.buffer) if self.buffer is not None else None

    def write(self, data: bytes) -> None:
        if self.fd is not None:  # a real descriptor: whole lines even when a signal interrupts the write
            self.buffer.flush()
            write_whole_lines(self.fd, data)
        elif self.buffer is not None:
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


class _FdSink(Sink):
    """Write through an fd we own (a dup of an inherited descriptor, or a device/FIFO we opened)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False

    def write(self, data: bytes) -> None:
        write_whole_lines(self.fd, data)

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)

    def commit(self) -> None:
        self._close()

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._close()

    def silence(self) -> None:  # EPIPE: the reader is gone; nothing more will be written
        with contextlib.suppress(OSError):
            self._close()


class _FileSink(Sink):
    """Write to a 0600 temp file beside the target and rename at the end: readers never see a torn file."""

    def __init__(self, target: str, shown: str, existing: os.stat_result | None, private: bool) -> None:
        self.path = target
        directory, name = os.path.split(target)
        if not os.path.isdir(directory):
            raise PptError(f"output directory does not exist: {directory}", ExitCode.IOERR, hint="create it first")
        self.existing = existing
        self.mode = (
            stat.S_IMODE(existing.st_mode) if existing is not None else (0o600 if private else 0o666 & ~_umask())
        )
        if private and existing is not None:  # raw values: an existing file loses its group and other bits
            self.mode &= 0o700
        self.private = private
        self.tmp: str | None = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            if existing is None or exc.errno not in (errno.EACCES, errno.EPERM):
                raise PptError(f"cannot write output {shown}: {exc.strerror}", ExitCode.IOERR) from None
            # the directory is closed to us but the file may not be: write it in place, like `>`
            self.tmp = None
            try:
                fd = os.open(target, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0))
            except OSError as exc2:
                raise PptError(f"cannot write output {shown}: {exc2.strerror}", ExitCode.IOERR) from None
        self.fh = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.fh.flush()

    def mark_private(self) -> None:
        if not self.private:  # a new file is 0600; an existing one keeps only its owner's bits
            self.private, self.mode = True, (self.mode & 0o700 if self.existing is not None else 0o600)

    def commit(self) -> None:
        self.fh.flush()
        fd = self.fh.fileno()
        if self.tmp is not None:
            os.fchmod(fd, self.mode)
            ex = self.existing
            if ex is not None and (ex.st_uid != os.geteuid() or ex.st_gid != os.getegid()):
                with contextlib.suppress(OSError):  # keep the owner where we may (root, or our own groups)
                    os.fchown(fd, ex.st_uid, ex.st_gid)
                    os.fchmod(fd, self.mode)  # chown clears set-id bits
        os.fsync(fd)
        self.fh.close()
        if self.tmp is not None:
            os.replace(self.tmp, self.path)
            self.tmp = None
            with contextlib.suppress(OSError):  # make the rename itself durable
                dfd = os.open(os.path.dirname(self.path), os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.fh.close()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)  # no /proc: read it back (restored at once)
    os.umask(mask)
    return mask


_FD_PATH = re.compile(r"/dev/(?:(stdin)|(stdout)|(stderr)|fd/(\d+))|/proc/(self|thread-self|\d+)/fd/(\d+)")


def _inherited_fd(path: str) -> int | None:
    """The descriptor number a /dev/fd/N-style path names in this process, or None."""
    m = _FD_PATH.fullmatch(os.path.normpath(os.path.abspath(path)))
    if m is None:
        return None
    stdin, stdout, stderr, dev_n, proc, proc_n = m.groups()
    if proc is not None and proc not in ("self", "thread-self") and int(proc) != os.getpid():
        return None  # another process's descriptor: open the path like any other
    if stdin:
        return 0
    if stdout:
        return 1
    if stderr:
        return 2
    return int(dev_n if dev_n is not None else proc_n)


def _std_closed(fd: int) -> bool:
    """Whether fd 0/1/2 was closed when the process started (then it holds /dev/null, or nothing)."""
    if fd == 0:
        return sys.stdin is None
    if fd == 1:
        return real_stdout() is None
    if fd == 2:
        return sys.stderr is None or isinstance(sys.stderr, _Discard)
    return False


def open_output(path: str, stdout: IO[bytes] | None = None, *, private: bool = False, fmt: str = "auto") -> Sink:
    """Open ``-o PATH`` (see the module doc). ``private``: a new file is created 0600. ``fmt``
    (--output-format): jsonl, jsonl.gz, jsonl.zst, csv or parquet, wherever the output goes
    (:mod:`ppt.io.output_formats`); ``auto``: the format a regular file's name says, else JSONL."""
    if fmt not in ("auto", "jsonl"):
        from ppt.io.output_formats import formatted

        plain = open_output(path, stdout, private=private, fmt="jsonl")
        return formatted(plain, fmt, "stdout" if path == "-" or stdout is not None else path)
    if stdout is not None:
        return _StreamSink(stdout, is_stdout=False)
    if path == "-":
        out = real_stdout()
        if out is None:
            raise PptError("stdout is closed", ExitCode.IOERR, hint="write to a file with -o, or keep stdout open")
        return _StreamSink(out, is_stdout=True)
    fd = _inherited_fd(path)
    if fd is not None:
        if _std_closed(fd):
            raise PptError(f"cannot write output {path}: it is closed", ExitCode.IOERR)
        try:
            return _FdSink(os.dup(fd))
        except OSError as exc:
            raise PptError(
                f"cannot write output {path}: {exc.strerror}",
                ExitCode.IOERR,
                hint="the descriptor is not open in this process",
            ) from None
    try:
        st: os.stat_result | None = os.stat(path)  # follows symlinks
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise PptError(f"cannot write output {path}: {exc.strerror}", ExitCode.IOERR) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise PptError(f"output path is a directory: {path}", ExitCode.IOERR, hint="give a file name with -o")
    if st is not None and not stat.S_ISREG(st.st_mode):  # a device, FIFO or socket: write through
        try:  # a FIFO blocks here until its reader opens it, as `> fifo` does
            return _FdSink(os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)))
        except OSError as exc:
            raise PptError(f"cannot write output {path}: {exc.strerror}", ExitCode.IOERR) from None
    target = os.path.realpath(path)  # a symlink: replace the file it points to, keep the link
    from ppt.io.formats import format_of
    from ppt.io.output_formats import formatted

    file = _FileSink(target, path, st, private)
    return formatted(file, "jsonl" if fmt == "jsonl" else format_of(path), path)  # .jsonl.gz, .csv, .parquet


def write_lines(path: str, lines: Any, *, private: bool = False) -> None:
    """Write ``lines`` (bytes each) to ``path`` through :func:`open_output` (atomic for regular files) for the
    writers outside ``run_stream`` (a dp-opt result, a summary, make-pii): a failed write is exit 74 naming the
    path, never a traceback, and leaves no partial file."""
    sink = open_output(path, private=private)
    try:
        for line in lines:
            sink.write(line)
        sink.commit()
    except BrokenPipeError:
        sink.silence()
    except OSError as e:
        sink.abort()
        raise PptError(f"cannot write {path}: {e.strerror or type(e).__name__}", ExitCode.IOERR) from None
    except BaseException:
        sink.abort()
        raise
