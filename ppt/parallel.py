"""Helper threads for batch work that releases the interpreter lock (numpy's samplers, the BPE encoder).

Work comes in items (a record, a text), claimed one at a time: from the front by the calling thread
and from the back by the helpers. Each item is computed whole by one thread, so results are the same
as on one thread, whatever the split. There are as many helpers as the threads torch may use, less
one (the calling thread), at most the cores this process may run on less one: one on a 2-core laptop,
fifteen on a 16-core GPU server, where the host's Laplace draws and tokenizing must keep up with the
device. ``torch.set_num_threads(1)`` keeps ppt on one core.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

_pool: ThreadPoolExecutor | None = None
_pool_size = 0  # the helper pool's threads
_pool_lock = threading.Lock()
_NAME = "ppt-helper"
_off = 0  # > 0 inside one_thread(): no helper


@contextlib.contextmanager
def one_thread():
    """No helper thread inside, and torch (when loaded) on one intra-op thread: for batches the driving
    process runs while worker processes already take every core (``ppt.exec.pool``)."""
    global _off
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else 1
    _off += 1
    if before > 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        _off -= 1
        if before > 1:
            torch.set_num_threads(before)


def _forget_pool() -> None:
    """In a forked child the helper thread does not exist: start a new one when needed."""
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _threads() -> int:
    """torch's intra-op thread count when torch is loaded (``torch.set_num_threads(1)`` keeps ppt on one
    core); otherwise OMP_NUM_THREADS or the cores this process may use (without importing torch)."""
    t = sys.modules.get("torch")
    if t is not None:
        return t.get_num_threads()
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return available_cores()


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def helpers() -> int:
    """How many helper threads batch work may use now: 0 where this process should stay on one thread
    (one_thread(), torch on one thread, or this is a helper)."""
    if _off or threading.current_thread().name.startswith(_NAME):
        return 0
    return max(0, min(_threads(), available_cores()) - 1)


def helper() -> ThreadPoolExecutor | None:
    """The helper threads' pool (``helpers()`` threads), or None where this process should stay on one thread."""
    global _pool, _pool_size
    n = helpers()
    if n < 1:
        return None
    with _pool_lock:
        if _pool is None or _pool_size < n:
            old, _pool, _pool_size = _pool, ThreadPoolExecutor(n, thread_name_prefix=_NAME), n
            if old is not None:
                old.shutdown(wait=False)
    return _pool


class Claims:
    """Items 0..n-1 handed out one at a time: from the front to the calling thread, from the back to the helpers."""

    def __init__(self, n: int):
        self.front, self.back = 0, n
        self._lock = threading.Lock()

    def take(self, from_back: bool) -> int | None:
        """The next unclaimed item from that end, or None when every item is claimed."""
        with self._lock:
            if self.front >= self.back:
                return None
            if from_back:
                self.back -= 1
                return self.back
            self.front += 1
            return self.front - 1


def for_each(fn: Callable[[int], None], n: int, share: bool = True) -> None:
    """``fn(i)`` for every i in range(n), shared with the helper thread when ``share`` and one is available.

    ``fn`` must handle each item on its own (writing only that item's results).
    """
    pool = helper() if share and n > 1 else None
    if pool is None:
        for i in range(n):
            fn(i)
        return
    claims = Claims(n)

    def work(from_back: bool) -> None:
        while (i := claims.take(from_back)) is not None:
            fn(i)

    later = [pool.submit(work, True) for _ in range(min(helpers(), n - 1))]
    try:
        work(False)
    finally:
        for f in later:
            f.result()


__all__ = ["Claims", "available_cores", "for_each", "helper", "helpers", "one_thread"]
