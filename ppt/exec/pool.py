"""Run a stage's batches in worker processes on this machine (``ppt sanitize --workers N``).

    with StagePool(SanitizeRecipe("rantext", 6.0, seed=1), workers=4) as pool:
        code = run_stream(args, pool, desc="sanitize")      # or run_stage_in_workers(args, recipe, workers=4)

Processes, not threads: a batch's Python work holds the interpreter lock. Each worker builds the stage
once, from the same picklable recipe (:mod:`ppt.exec.recipes`), with the cache read-only.

The contract: the output cannot change. ``run_stream`` reads, validates, batches and writes exactly as
without workers; only ``stage(records)`` runs elsewhere, a seeded record's noise comes from (seed, id)
alone, and results come back in input order. Fail closed: a worker that dies ends the run with PptError 75
that names no record text. A script that uses the pool must guard its entry point with
``if __name__ == "__main__":``.

This module is the driving side; what runs inside a worker is :mod:`ppt.exec.pool_worker`. Bounded and
lazy start-up, why forkserver, threads per worker, failing closed in full: docs/scale.md
("Worker processes on one machine").
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

from ppt import parallel
from ppt.exec.pool_worker import HINT, _init, _ready, _run
from ppt.io import ExitCode, PptError, Record, RecordError, StreamArgs, run_stream
from ppt.parallel import available_cores
from ppt.stages.base import Stage

PER_WORKER = 2  # batches in flight per worker: one running, one queued behind it
STOP_GRACE_S = 5.0  # an early stop waits at most this long at each step for workers and threads to end
# what the fork server imports once, so that workers fork with it loaded (plus the stage's mechanism module)
PRELOAD = ["ppt.exec._forkserver", "ppt.exec.pool", "ppt.stages.sanitize"]


def default_workers(stage: Stage | None = None) -> int:
    """The cores available; 1 when the stage's mechanism runs on a GPU (its batches are the GPU's work)."""
    device = getattr(getattr(stage, "mech", None), "device", None)
    if device is not None and str(device).split(":")[0] in ("cuda", "mps"):
        return 1
    return available_cores()


def check_workers(workers: int | None) -> None:
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise PptError(f"--workers must be >= 1 (got {workers})", ExitCode.USAGE)


def start_method() -> str:
    import multiprocessing  # here, not at the top: a one-batch run never needs it

    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


# ------------------------------------------------------------------------------------ the driving side


class _Pending:
    """One submitted batch: held for this process (no pool yet), or a future of the pool."""

    def __init__(self, pool: StagePool, records: list[Record]) -> None:
        self.pool, self.records = pool, records
        self.future: Any = None
        self.value: Any = None  # the results (list) or a whole-batch RecordError, once known
        self.known = False

    def done(self) -> bool:
        return self.known or (self.future is not None and self.future.done())

    def result(self) -> list[Any]:
        if not self.known:
            self.value = self.pool._collect(self)
            self.known = True
            self.records = []
        if isinstance(self.value, RecordError):
            raise self.value
        return self.value


class StagePool:
    """A stage whose batches run in ``workers`` processes, for ``run_stream`` (``submit``/``max_in_flight``).

    ``recipe`` builds the stage in each worker; ``stage`` is this process's copy (built from the recipe
    when not given), prepared by ``prepare()`` before input is read: it checks the configuration, builds
    the tables the workers then load, and runs an input that fits in one batch. ``workers=None``: the
    cores available (1 for a stage on a GPU). ``build_hint`` names the command that builds a table a
    worker finds missing."""

    def __init__(
        self,
        recipe: Callable[[], Stage],
        workers: int | None = None,
        *,
        stage: Stage | None = None,
        per_worker: int = PER_WORKER,
        build_hint: str | None = None,
        help_while_starting: bool = True,
    ) -> None:
        check_workers(workers)
        self.recipe, self.stage, self.build_hint = recipe, stage, build_hint
        self.help_while_starting = help_while_starting
        self.requested = workers
        self.per_worker = max(1, int(per_worker))
        self.workers = workers or 1  # resolved in prepare()
        self._executor: Any = None
        self.started = False  # whether worker processes were ever started
        self.batches_in_workers = 0  # batches the workers ran (the rest ran here)
        self._pings: list[Any] = []  # one no-op task per worker: done when a worker is ready
        self._starter: threading.Thread | None = None
        self._closing = False  # close() came while the starter thread was still starting workers
        # CPU seconds the workers took to start (fork to stage prepared) and on the batches collected (benches)
        self.worker_start_cpu_s = self.worker_cpu_s = 0.0
        self._waiting: list[_Pending] = []  # submitted and not yet collected, oldest first
        self._warned: dict = {}  # the warnings registry replayed warnings are filtered against

    # -- what run_stream reads
    @property
    def name(self) -> str:
        return getattr(self.stage, "name", "")

    @property
    def private_output(self) -> bool:
        if self.stage is None:  # run_stream asks before prepare(): build this process's stage now
            self.stage = self.recipe()
        return bool(getattr(self.stage, "private_output", False))

    @property
    def max_in_flight(self) -> int:
        """Batches run_stream may hold unwritten; 0 with one worker (each batch runs here, at once)."""
        return self.per_worker * self.workers if self.workers > 1 else 0

    def prepare(self) -> None:
        if self.stage is None:
            self.stage = self.recipe()
        self.stage.prepare()
        self.workers = self.requested or default_workers(self.stage)
        if self.workers > 1 and getattr(type(self.stage), "summary", Stage.summary) is not Stage.summary:
            raise PptError(
                f"{self.stage.name or type(self.stage).__name__} writes an end-of-run summary, which "
                "worker processes cannot merge yet",
                ExitCode.USAGE,
                hint="run it with --workers 1",
            )

    def signature(self) -> dict[str, Any]:
        assert self.stage is not None
        return self.stage.signature()

    def __call__(self, records: list[Record]) -> list[Any]:
        assert self.stage is not None
        return self.stage(records)

    def submit(self, records: list[Record]) -> _Pending:
        """Queue one batch. Held for this process while nothing else waits (a one-batch input starts no
        worker); the pool starts when a second batch arrives while one is held. Until a worker is ready,
        this process runs the oldest batch itself whenever run_stream needs it (it would wait otherwise)."""
        pending = _Pending(self, records)
        self._waiting = [p for p in self._waiting if not p.known]
        if self._executor is None and self.workers > 1 and self._waiting:
            self._start()
        self._waiting.append(pending)
        self._dispatch()
        return pending

    # -- internals
    def _start(self) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        assert self.stage is not None
        self.started = True
        method = start_method()
        ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(PRELOAD + _mechanism_module(self.stage))
        threads = max(1, available_cores() // self.workers)
        level = logging.getLogger("ppt").getEffectiveLevel()
        self._executor = ProcessPoolExecutor(
            self.workers,
            mp_context=ctx,
            initializer=_init,
            initargs=(self.recipe, dict(os.environ), threads, level, self.build_hint),
        )
        self._starter = threading.Thread(
            target=self._start_workers, args=(self._executor,), name="ppt-pool-start", daemon=True
        )
        self._starter.start()

    def _start_workers(self, executor: Any) -> None:
        """Start every worker, in a thread of its own: the first start waits for the fork server's imports,
        which this process should spend on batches. Each submit starts a worker while none is idle, so one
        no-op task (a ping) per worker starts them all."""
        try:
            for _ in range(self.workers):
                if self._closing:
                    break
                self._pings = [*self._pings, executor.submit(_ready)]
        except Exception:  # noqa: BLE001 - a broken or closed pool: the batches report it
            pass
        if self._closing:  # close() came meanwhile and left the pool to this thread
            _stop(executor, force=True)

    def _ready(self) -> bool:
        """Whether a worker has its stage (or failed to build it: its batches then raise the error)."""
        return not self.help_while_starting or any(p.done() for p in self._pings)

    def _dispatch(self, skip: _Pending | None = None) -> None:
        """Hand the batches this process holds to the workers, once one is ready."""
        if self._executor is None or not self._ready():
            return
        from concurrent.futures.process import BrokenProcessPool

        for p in self._waiting:
            if p.future is None and not p.known and p is not skip:
                try:
                    p.future = self._executor.submit(_run, p.records)
                except BrokenProcessPool:
                    raise _died() from None
                self.batches_in_workers += 1

    def _collect(self, pending: _Pending) -> Any:
        """The batch's results (or whole-batch RecordError), its worker's messages replayed here."""
        if pending.future is None:  # held (one batch so far, or no worker ready yet): run it here
            self._dispatch(skip=pending)  # the ones behind it go to the workers if they are ready now
            # once workers are starting they take the cores: this process adds no thread of its own
            alone = parallel.one_thread() if self._executor is not None else contextlib.nullcontext()
            try:
                with alone:
                    return list(self(pending.records))
            except RecordError as e:
                return e
        from concurrent.futures.process import BrokenProcessPool

        try:
            results, events, logs, warns, cpu = pending.future.result()
        except BrokenProcessPool:
            raise _died() from None
        except (PptError, RecordError):
            raise
        except Exception as e:  # noqa: BLE001 - e.g. a result that could not be sent back
            raise PptError(f"a worker failed on a batch ({type(e).__name__})", ExitCode.TEMPFAIL, hint=HINT) from None
        self.worker_start_cpu_s += cpu[0]
        self.worker_cpu_s += cpu[1]
        self._replay(logs, warns)
        if events is not None:
            self.stage.absorb(pending.records, events)  # type: ignore[union-attr]
        return results

    def _replay(self, logs: list[logging.LogRecord], warns: list) -> None:
        for record in logs:
            target = logging.getLogger(record.name)
            if target.isEnabledFor(record.levelno):
                target.handle(record)
        for message, category, filename, lineno in warns:
            warnings.warn_explicit(message, category, filename, lineno, registry=self._warned)

    def close(self) -> None:
        """Stop the workers: at once when batches are still running (an early stop), else gracefully."""
        executor, self._executor = self._executor, None
        waiting, self._waiting = self._waiting, []
        if executor is None:
            return
        if self._starter is not None and self._starter.is_alive():
            # the fork server is still importing: do not wait for it. The workers started so far stop now;
            # once this process is gone the server exits without forking, and a worker forked meanwhile
            # exits quietly (ppt.exec._forkserver)
            self._closing = True
            _terminate(executor)
            return
        busy = [p.future for p in waiting if p.future is not None] + self._pings
        _stop(executor, force=any(not f.done() for f in busy))

    def __enter__(self) -> StagePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stop(executor: Any, force: bool) -> None:
    """Shut the pool down: gracefully when no batch runs, else (an early stop, a signal) by killing its
    workers, without waiting unbounded on the executor's threads (:func:`_force_stop`)."""
    if not force:
        executor.shutdown(wait=True, cancel_futures=True)
        return
    _force_stop(executor)


def _force_stop(executor: Any, grace: float = STOP_GRACE_S) -> None:
    """Kill the workers and unblock the executor's manager thread, each wait bounded by ``grace`` seconds.

    A worker killed while it sends a result back leaves the manager thread in ``recv()`` waiting for the
    rest of the message, and this process still holds the result pipe's write end, so no end of file
    comes: ``shutdown(wait=True)`` (and the interpreter's exit, which joins that thread too) waited
    forever (reliability probe P-D7). So: terminate the workers, kill those still alive after ``grace``,
    then close this process's write end (every other one died with its worker): the manager thread reads
    end of file, fails the pool as broken and ends. Python 3.10 then also waits for its queue feeder
    thread, stuck writing to a call pipe no worker reads: closing this process's read end frees it."""
    # taken first: Python 3.14's terminate_workers() drops the executor's references to them
    manager = getattr(executor, "_executor_manager_thread", None)
    procs = list((getattr(executor, "_processes", None) or {}).values())
    results, calls = getattr(executor, "_result_queue", None), getattr(executor, "_call_queue", None)
    _terminate(executor)
    executor.shutdown(wait=False, cancel_futures=True)
    alive = {p.sentinel: p for p in procs}
    _await_ended(alive, grace)
    for proc in alive.values():
        with contextlib.suppress(Exception):
            proc.kill()
    _await_ended(alive, grace)
    if results is not None:
        with contextlib.suppress(OSError, AttributeError):
            results._writer.close()
    if manager is None:
        return
    manager.join(grace)
    if manager.is_alive() and calls is not None:
        with contextlib.suppress(OSError, AttributeError):
            calls._reader.close()
        manager.join(grace)
    if manager.is_alive():
        logging.getLogger("ppt").warning("the worker pool's manager thread did not stop; exiting may wait on it")


def _await_ended(alive: dict[Any, Any], timeout: float) -> None:
    """Wait until every process in ``alive`` (sentinel: process) has ended, at most ``timeout`` seconds;
    the ended ones leave ``alive``."""
    import time
    from multiprocessing.connection import wait

    deadline = time.monotonic() + timeout
    while alive and (left := deadline - time.monotonic()) > 0:
        for sentinel in wait(list(alive), timeout=left):
            alive.pop(sentinel)


def _terminate(executor: Any) -> None:
    """Kill the pool's workers: the public ``terminate_workers`` from Python 3.14, else its process table
    (no public way before 3.14)."""
    if hasattr(executor, "terminate_workers"):
        with contextlib.suppress(Exception):
            executor.terminate_workers()
        return
    for proc in list((getattr(executor, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            proc.terminate()


def _died() -> PptError:
    return PptError(
        "a worker process died before its batch was done (killed, or out of memory?); "
        "no output was written past the last finished batch",
        ExitCode.TEMPFAIL,
        hint=HINT,
    )


def _mechanism_module(stage: Stage) -> list[str]:
    """The module of the stage's mechanism, for the fork server to import once (a sanitize stage)."""
    module = type(getattr(stage, "mech", None)).__module__
    return [module] if module.startswith("ppt.") else []


def run_stage_in_workers(
    args: StreamArgs,
    recipe: Callable[[], Stage],
    *,
    workers: int | None = None,
    stage: Stage | None = None,
    desc: str = "records",
    build_hint: str | None = None,
    **streams: Any,
) -> int:
    """``run_stream`` with the stage's batches in ``workers`` processes (None: the cores available);
    ``workers=1`` runs in this process, exactly as ``run_stream(args, stage or recipe())``. ``streams``:
    run_stream's ``_stdin``/``_stdout``/``_stderr``."""
    check_workers(workers)
    if workers == 1:
        return run_stream(args, stage if stage is not None else recipe(), desc=desc, **streams)
    with StagePool(recipe, workers, stage=stage, build_hint=build_hint) as pool:
        return run_stream(args, pool, desc=desc, **streams)


__all__ = ["PER_WORKER", "StagePool", "available_cores", "default_workers", "run_stage_in_workers", "start_method"]
