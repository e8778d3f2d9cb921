"""The worker-process half of :mod:`ppt.exec.pool`: what runs inside each worker it starts.

Apart from the driving side because it is the code the fork server's children execute: the initializer
that builds the stage once (cache read-only, stdout and Ctrl-C let go, threads capped), and the task that
runs one batch and sends back its results with the log records and warnings to replay in the driver.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from ppt.exec.readonly import read_only_cache
from ppt.io import ExitCode, PptError, Record, RecordError
from ppt.stages.base import Stage

HINT = "rerun with --workers 1 to process the input in one process"

_STAGE: Stage | None = None
_INIT_ERROR: PptError | None = None
_CAUGHT: list[logging.LogRecord] = []
_INIT_CPU = 0.0  # CPU seconds this worker took to start (reported once, with its first batch)


class _Collect(logging.Handler):
    """Keeps a worker's ``ppt`` log records for the driving process to replay."""

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args = record.getMessage(), None  # picklable whatever the arguments were
        record.exc_info = record.exc_text = record.stack_info = None
        _CAUGHT.append(record)


def _limit_threads(threads: int) -> None:
    """``threads`` for torch and BLAS in this worker (torch only when it is already imported)."""
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
    with contextlib.suppress(Exception):
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)


def _watch_parent() -> None:
    """Exit when the driving process is gone (killed: it cannot shut the pool down)."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="ppt-parent-watch", daemon=True).start()


def _init(
    make_stage: Callable[[], Stage], env: dict[str, str], threads: int, log_level: int, build_hint: str | None
) -> None:
    """Worker initializer: build the stage once. Never raises (an initializer that raises breaks the
    pool with a traceback on stderr); a failure is kept and raised by the first batch instead."""
    global _STAGE, _INIT_ERROR
    # the fork server is started once per process: take the driving process's environment of now
    # (PPT_CACHE, offline switches), not the one the server was started with
    os.environ.clear()
    os.environ.update(env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.dup2(2, 1)  # stdout carries the JSONL of the driving process: nothing from here may reach it
    _watch_parent()
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)  # for libraries imported from here on
    _limit_threads(threads)
    ppt_logger = logging.getLogger("ppt")
    ppt_logger.handlers[:] = [_Collect()]
    ppt_logger.setLevel(log_level)
    ppt_logger.propagate = False
    try:
        with warnings.catch_warnings(), read_only_cache(build_hint):
            warnings.simplefilter("ignore")  # the driving process built the same stage and said it all
            stage = make_stage()
            stage.prepare()
        _STAGE = stage
    except PptError as e:
        _INIT_ERROR = e
    except BaseException as e:  # noqa: BLE001 - reported without its message (it could quote data)
        _INIT_ERROR = PptError(f"a worker could not build its stage ({type(e).__name__})", ExitCode.TEMPFAIL, hint=HINT)
    _CAUGHT.clear()
    _limit_threads(threads)  # building may have imported torch
    global _INIT_CPU
    _INIT_CPU = time.process_time()


def _ready() -> bool:
    """A no-op task: done once a worker has run its initializer (its stage built, or the error kept)."""
    return _STAGE is not None


def _run(records: list[Record]) -> tuple[Any, Any, list, list, float]:
    """One batch in a worker: (results or a whole-batch RecordError, the stage's events, log records,
    warnings, (this worker's start-up CPU seconds the first time, else 0; the batch's)), all picklable."""
    if _INIT_ERROR is not None:
        raise _INIT_ERROR
    assert _STAGE is not None
    cpu = time.process_time()
    _CAUGHT.clear()
    events = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # the driving process applies its own filters when replaying
        try:
            detached = getattr(_STAGE, "call_detached", None)
            if callable(detached):
                results, events = detached(records)
            else:
                results = list(_STAGE(records))
        except RecordError as e:
            results = e
        except PptError:
            raise
        except Exception as e:  # noqa: BLE001 - fail closed, and never pass on a message that could quote data
            raise PptError(f"a worker failed on a batch ({type(e).__name__})", ExitCode.TEMPFAIL, hint=HINT) from None
    warns = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
    logs = list(_CAUGHT)
    _CAUGHT.clear()
    global _INIT_CPU
    start, _INIT_CPU = _INIT_CPU, 0.0
    return results, events, logs, warns, (start, time.process_time() - cpu)
