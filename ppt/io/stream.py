"""run_stream: the one loop every subcommand uses to read, validate, batch, process and write JSONL.

Keeping it in one place is what makes the stream contracts (order, --on-error, exit codes, stdout
hygiene, `| head`) hold for every subcommand at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, Any

from ppt.io.args import StreamArgs
from ppt.io.errors import PptError, RecordError, Terminated
from ppt.io.exitcodes import ExitCode
from ppt.io.jsonl import dumps_line, is_interactive, iter_lines, iter_lines_interactive
from ppt.io.records import ON_ERROR_MODES, BadLine, Record, parse_line
from ppt.io.report import RunReport
from ppt.io.run_report import active as active_report
from ppt.io.sinks import Sink, open_output
from ppt.io.stdout import error_stream, stdout_guard

ProcessBatch = Callable[[list[Record]], list[Any]]


def _open_input(path: str, stdin: IO[bytes] | None, fmt: str = "auto") -> tuple[Any, bool]:
    from ppt.io.formats import open_input  # .jsonl.gz, .csv, .parquet, --input-format: read as JSONL lines

    return open_input(path, fmt, stdin)


def _read(lines: Iterator[tuple[int, bytes] | None]) -> Iterator[tuple[int, bytes] | None]:
    """Turn read failures (disk, NFS) into a fatal IOERR instead of a traceback."""
    while True:
        try:
            item = next(lines)
        except StopIteration:
            return
        except OSError as exc:
            raise PptError(f"cannot read input: {exc.strerror or exc}", ExitCode.IOERR) from None
        yield item


def reveals_raw(data: Any) -> bool:
    """Whether an output record carries raw values, as its stamps declare: the raw text, its alignment, the
    diagnostics or the surrogate -> original map of ``ppt sanitize`` (--keep-original, --emit-alignment,
    --diagnostics, --mapping), Split-N-Denoise's local-only fields, or a ``ppt restore`` answer. Then every
    writer makes its new -o file 0600."""
    stamps = data.get("ppt") if isinstance(data, dict) else None
    if not isinstance(stamps, dict):
        return False
    if isinstance(stamps.get("restore"), dict):  # an answer with the real values put back
        return True
    block = stamps.get("sanitize")
    fields = []
    if isinstance(block, dict):
        fields += [block.get(k) for k in ("keep_original", "alignment_field", "diagnostics_field", "mapping_field")]
    snd = stamps.get("snd")
    privacy = snd.get("privacy") if isinstance(snd, dict) else None
    local = privacy.get("local_only") if isinstance(privacy, dict) else None
    if isinstance(local, list):
        fields += local
    return any(isinstance(f, str) and f in data for f in fields)


# --------------------------------------------------------------------------------------- runner


class _BrokenPipe(Exception):
    pass


class _Unprocessed:
    """A stage's result for a record it did not get to (it stopped the run first): neither written nor
    counted. Set ``stop_error`` on the stage (a PptError) to end the run after the window is written."""

    def __repr__(self) -> str:
        return "UNPROCESSED"


UNPROCESSED = _Unprocessed()


class _Runner(RunReport):
    def __init__(
        self,
        opts: StreamArgs,
        process_batch: ProcessBatch,
        desc: str,
        total_hint: int | None,
        sink: Sink,
        err: IO[str],
    ) -> None:
        super().__init__(opts, desc, err)
        self.process_batch, self.sink = process_batch, sink
        self.window: list[Record | BadLine] = []
        self.pending = 0  # Records in the window
        # a pool (``submit``/``max_in_flight``, e.g. ppt.exec.pool.StagePool): batches run while more are
        # read; finished ones are written in input order, at most max_in_flight wait unwritten
        self.submit = getattr(process_batch, "submit", None)
        self.max_in_flight = int(getattr(process_batch, "max_in_flight", 0)) if callable(self.submit) else 0
        self.in_flight: deque[tuple[list[Record | BadLine], Any]] = deque()
        self.private_seen = False
        self.collector = active_report()  # --report: sees each written record (ppt.io.run_report)
        self.bar = _progress(desc, total_hint, err, opts.quiet, opts.input, opts.input_format)

    # -- reporting (wording shared with the cluster driver: :class:`ppt.io.report.RunReport`)
    def _say(self, text: str) -> None:
        self.say(text)

    def _count_failure(self, bad: BadLine) -> None:
        self.count_failure(bad.line_no, bad.error.type)

    def _fatal(self, bad: BadLine) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        self.fatal(bad.line_no, bad.error.type, bad.error.message)

    # -- main loop
    def run(self, lines: Iterator[tuple[int, bytes] | None]) -> int:
        try:
            code = self._loop(lines)
        except _BrokenPipe:
            self.sink.silence()
            return int(ExitCode.OK)  # like other Unix tools: no summary after `| head`
        finally:
            if self.bar is not None:
                self.bar.close()
        if code is None:
            self.summary()
            code = ExitCode.SOME_FAILED if self.failed else ExitCode.OK
        return int(code)

    def _loop(self, lines: Iterator[tuple[int, bytes] | None]) -> int | None:
        opts = self.opts
        window_cap = opts.batch_size + 1024  # bounds memory when many lines are bad
        for entry in _read(lines):
            if entry is None:  # the input stalled (an interactive pipe): process what is there now
                code = self._flush()
                if code is not None:
                    return code
                continue
            line_no, raw = entry
            item = parse_line(raw, line_no, opts)
            if isinstance(item, BadLine) and opts.on_error == "fail":
                code = self._flush()
                if code is not None:
                    return code
                self.failed[item.error.type] += 1
                self._fatal(item)
                return ExitCode.DATAERR
            self.window.append(item)
            if isinstance(item, Record):
                self.pending += 1
            if self.pending >= opts.batch_size or len(self.window) >= window_cap:
                code = self._flush(drain=False)
                if code is not None:
                    return code
        return self._flush()

    def _flush(self, drain: bool = True) -> int | None:
        """Hand the window's records to the stage, then write finished batches and error records in input
        order: every batch when ``drain`` (end of input, a stalled pipe, a bad line under fail), else
        those done and any beyond ``max_in_flight`` (0 without a pool: the batch just processed)."""
        if self.window:
            records = [x for x in self.window if isinstance(x, Record)]
            with stdout_guard():
                handle = self.submit(records) if records and self.submit is not None else self._process(records)
            self.in_flight.append((self.window, handle))
            self.window = []
            self.pending = 0
        while self.in_flight:
            window, handle = self.in_flight[0]
            if not (drain or len(self.in_flight) > self.max_in_flight or _done(handle)):
                break
            self.in_flight.popleft()
            code = self._emit(window, self._results(window, handle))
            if code is not None:
                return code
        return None

    def _process(self, records: list[Record]) -> list[Any]:
        if not records:
            return []
        try:
            return list(self.process_batch(records))
        except RecordError as exc:  # a whole-batch failure applies to each record
            return [exc] * len(records)

    @staticmethod
    def _results(window: list[Record | BadLine], handle: Any) -> list[Any]:
        n = sum(isinstance(x, Record) for x in window)
        if isinstance(handle, list):
            results = handle
        else:
            with stdout_guard():
                try:
                    results = list(handle.result())
                except RecordError as exc:
                    results = [exc] * n
        if len(results) != n:
            raise RuntimeError(f"process_batch returned {len(results)} results for {n} records")
        return results

    def _emit(self, window: list[Record | BadLine], results: list[Any]) -> int | None:
        """Write one processed window in input order, applying --on-error."""
        out: list[bytes] = []
        it = iter(results)
        fatal: BadLine | None = None
        for item in window:
            if isinstance(item, Record):
                res = next(it)
                if res is UNPROCESSED:  # the stage stopped before this record (stop_error below)
                    continue
                if not isinstance(res, RecordError):
                    out.append(dumps_line(res))
                    if self.collector is not None:
                        self.collector.observe(res)
                    if not self.private_seen and reveals_raw(res):
                        self.private_seen = True
                        self.sink.mark_private()
                    self.ok += 1
                    continue
                item = BadLine(item.line_no, item.data.get(self.opts.id_field), res)
            self._count_failure(item)
            if self.opts.on_error == "fail":
                fatal = item
                break
            if self.opts.on_error == "record":
                out.append(dumps_line({self.opts.id_field: item.id, "error": item.error.to_dict(item.line_no)}))
        self._write(b"".join(out))
        if self.bar is not None:
            self.bar.update(len(window))
        stop = getattr(self.process_batch, "stop_error", None)
        if isinstance(stop, PptError):  # the stage cannot go on (e.g. its journal): what it has is written
            if self.bar is not None:
                self.bar.close()
                self.bar = None
            self.say(f"ppt: error: {stop.message}")
            if stop.hint:
                self.say(f"  hint: {stop.hint}")
            return int(stop.exit_code)
        if fatal is not None:
            self._fatal(fatal)
            return ExitCode.SOME_FAILED
        return None

    def _write(self, data: bytes) -> None:
        if not data:
            return
        try:
            self.sink.write(data)
        except BrokenPipeError:
            raise _BrokenPipe() from None
        except OSError as exc:
            raise PptError(f"cannot write output: {exc.strerror or exc}", ExitCode.IOERR) from None


def _done(handle: Any) -> bool:
    return isinstance(handle, list) or handle.done()


def _progress(desc: str, total: int | None, err: IO[str], quiet: bool, source: str = "-", fmt: str = "auto") -> Any:
    if quiet:
        return None
    try:
        if not err.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    from tqdm import tqdm

    if total is None:
        total = records_in(source, fmt)  # a total (and an ETA) when the input's size is known
    return tqdm(total=total, desc=desc, unit="rec", file=err, dynamic_ncols=True, leave=False)


COUNT_CHUNK = 1 << 24


def records_in(source: str, fmt: str = "auto") -> int | None:
    """How many records ``-i SOURCE`` holds, when that is cheap to know: a plain JSONL file's lines (counted in
    16 MiB chunks, about a second per GB, and only for a progress bar on a terminal), a Parquet file's row
    count from its footer; None for stdin, pipes, compressed files and CSV."""
    if source in ("-", "") or not os.path.isfile(source):
        return None
    from ppt.io.formats import input_format

    try:
        fmt = input_format(source, fmt)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(source).metadata.num_rows)
        if fmt != "jsonl":
            return None
        lines, last = 0, b"\n"
        with open(source, "rb") as f:
            while chunk := f.read(COUNT_CHUNK):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
        return lines + (last != b"\n")
    except (OSError, ValueError, ImportError, PptError):
        return None


def _validate(opts: StreamArgs) -> None:
    if opts.on_error not in ON_ERROR_MODES:
        raise PptError(
            f"unknown --on-error mode {opts.on_error!r}", ExitCode.USAGE, hint="use one of: fail, skip, record"
        )
    if not isinstance(opts.batch_size, int) or opts.batch_size < 1:
        raise PptError(f"--batch-size must be >= 1 (got {opts.batch_size})", ExitCode.USAGE)


_TERMINATING = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextlib.contextmanager
def _terminate_on_signals() -> Iterator[None]:
    """While the run lasts, SIGTERM and SIGHUP raise :class:`Terminated` (as SIGINT raises
    KeyboardInterrupt), so the sink's temp file is removed on the way out. A signal that is ignored
    (``nohup``) stays ignored; outside the main thread nothing is installed (Python cannot)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        if fired:  # a second signal while cleaning up: let the cleanup finish
            return
        fired.append(signum)
        raise Terminated(signum)

    previous: dict[int, Any] = {}
    for sig in _TERMINATING:
        try:
            current = signal.getsignal(sig)
            if current in (signal.SIG_IGN, None):
                continue
            previous[sig] = signal.signal(sig, handler)
        except (OSError, ValueError):
            continue
    try:
        yield
    finally:
        for sig, old in previous.items():
            with contextlib.suppress(OSError, ValueError, TypeError):
                signal.signal(sig, old)


def run_stream(
    opts: StreamArgs,
    process_batch: ProcessBatch,
    desc: str = "records",
    total_hint: int | None = None,
    *,
    _stdin: IO[bytes] | None = None,
    _stdout: IO[bytes] | None = None,
    _stderr: IO[str] | None = None,
) -> int:
    """Read JSONL, validate, batch, call ``process_batch``, write JSONL in input order; return the exit code.

    ``process_batch`` (a :class:`ppt.stages.base.Stage` or any callable; a ``prepare()`` method is called
    once, after input and output are opened, before the first line is read) gets up to ``opts.batch_size``
    valid records and returns one output dict or RecordError per record, in order (raising RecordError
    fails the whole batch; PptError propagates). Records are validated first, one by one (JSON, object,
    text field, a ``ppt`` field that is an object or absent), so a bad record fails alone.

    --on-error:
      fail    first bad input line -> ``ppt: error: line N: ...`` on stderr, earlier output flushed,
              returns DATAERR (65); a RecordError from process_batch returns SOME_FAILED (1).
      skip    bad records dropped and counted; returns SOME_FAILED (1) if any.
      record  ``{<id_field>: id, "error": {"type", "message", "line"}}`` written in place; 1 if any.
              ``id`` is the record's own id, or null when it has none (never a line index that could
              collide with a real id); ``line`` is always there.
    A closed stdout (``| head``) stops reading and returns OK quietly. Output goes through
    :func:`ppt.io.sinks.open_output`: a regular file is written to a 0600 temp file renamed over the
    target when run_stream returns (also after fail-mode stops, so what came before the bad line is
    kept, as on stdout); devices, FIFOs, /dev/fd/N and symlink targets are written through. The new
    file is 0600 when ``opts.private`` or the stage's ``private_output`` is true. On an exception
    (SIGINT, and SIGTERM/SIGHUP, which raise :class:`Terminated` while the run lasts) the temp file is
    removed and the target left untouched. Input from a pipe or terminal is processed whenever it stalls,
    so interactive output is not held back for a full batch; files are read in full batches.
    A closed stdin/stdout is PptError 66/74; a closed stderr drops messages.
    ``_stdin``/``_stdout``/``_stderr`` substitute the process streams (tests, embedding).
    A ``process_batch`` with ``submit(records)`` (a handle with ``done()`` and ``result()``) and
    ``max_in_flight`` (e.g. :class:`ppt.exec.pool.StagePool`) runs batches while more are read; they are
    written in input order with the same --on-error handling, at most ``max_in_flight`` held unwritten.
    """
    _validate(opts)
    collector = active_report()
    if collector is not None:  # --report: refuses a report path that is the input or the output
        collector.begin(opts, desc)
    err = error_stream(_stderr)
    private = bool(opts.private or getattr(process_batch, "private_output", False))
    with _terminate_on_signals():
        src, close_src = _open_input(opts.input, _stdin, opts.input_format)
        try:
            sink = open_output(opts.output, _stdout, private=private, fmt=opts.output_format)
            try:
                prepare = getattr(process_batch, "prepare", None)
                if callable(prepare):  # a Stage: load models and tables before the first record is read
                    with stdout_guard():
                        prepare()
                lines = iter_lines_interactive(src) if is_interactive(src) else iter_lines(src)
                runner = _Runner(opts, process_batch, desc, total_hint, sink, err)
                code = runner.run(lines)
                sink.commit()
                if collector is not None:
                    collector.finish(runner, code, process_batch)
            except BaseException:
                sink.abort()
                raise
            return code
        finally:
            if close_src:
                src.close()
