"""Stage recipes for the worker-pool tests: picklable, importable by worker processes (the repository
root is on their path), building a tiny random space in a given cache directory."""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass

import numpy as np

from ppt.stages.base import Stage

WORDS = (
    "the and apple banana cherry grape lemon mango melon olive peach pear plum berry kiwi lime date fig guava "
    "papaya quince raisin orange apricot almond walnut pecan cashew carrot celery onion garlic ginger pepper "
    "potato tomato radish turnip squash pumpkin"
).split()


@dataclass
class TinyRecipe:
    """A sanitize stage on a 40-word random space cached under ``cache_dir``. ``kill_on``: the id of a
    record whose batch kills the worker process running it (``os._exit``; never this process).
    ``fail_on``: the id of a record whose batch raises ValueError quoting the record text. ``tear_on``:
    the id of a record whose worker starts sending a result and never finishes it (:func:`tear_result`),
    after writing ``torn_marker``."""

    cache_dir: str
    mech: str = "rantext"
    eps: float = 3.0
    seed: int | None = 7
    min_kept: int = 0
    emit_alignment: str | None = None
    kill_on: object = None
    fail_on: object = None
    tear_on: object = None
    torn_marker: str | None = None

    def __call__(self) -> Stage:
        from ppt.cache import Cache
        from ppt.mechanisms import get_mechanism
        from ppt.spaces import space_from_arrays
        from ppt.stages.sanitize import SanitizeStage
        from ppt.stages.sanitize_spec import SanitizeSpec

        emb = np.random.default_rng(7).normal(size=(len(WORDS), 8)).astype(np.float32)
        space = space_from_arrays("tiny-pool", WORDS, emb, cache=Cache(self.cache_dir))
        mech = get_mechanism(self.mech, self.eps, space=space, quiet=True)
        stage = SanitizeStage(
            mech, SanitizeSpec(self.mech, seed=self.seed, min_kept=self.min_kept, emit_alignment=self.emit_alignment)
        )
        if self.kill_on is None and self.fail_on is None and self.tear_on is None:
            return stage
        return _Sabotage(stage, self.kill_on, self.fail_on, self.tear_on, self.torn_marker)


class _Sabotage(Stage):
    name = "sanitize"

    def __init__(self, inner, kill_on, fail_on, tear_on=None, torn_marker=None) -> None:
        self.inner, self.kill_on, self.fail_on = inner, kill_on, fail_on
        self.tear_on, self.torn_marker = tear_on, torn_marker

    def prepare(self) -> None:
        self.inner.prepare()

    def signature(self):
        return self.inner.signature()

    def __call__(self, records):
        ids = {r.id for r in records}
        if self.kill_on in ids and multiprocessing.parent_process() is not None:  # a worker: die, no cleanup
            os._exit(3)
        if self.tear_on in ids and multiprocessing.parent_process() is not None:
            tear_result(self.torn_marker)
        if self.fail_on in ids:
            raise ValueError("boom: " + " ".join(r.text or "" for r in records))
        return self.inner(records)


def tear_result(marker: str | None) -> None:
    """In a pool worker: write the start of a result message (its length and part of its body) to the
    pool's result pipe, write ``marker``, and never send the rest. The driving process's executor thread
    then waits in ``recv()`` for bytes that never come: what a worker killed while sending its result
    leaves behind (reliability probe P-D7), made certain instead of a one-in-70 race."""
    import struct
    import sys
    import time
    from pathlib import Path

    frame = sys._getframe()
    while frame.f_code.co_name != "_process_worker":  # concurrent.futures' worker loop holds the queue
        frame = frame.f_back
    queue = frame.f_locals["result_queue"]
    queue._wlock.acquire()  # as a real send holds it: the other workers' results wait behind this one
    os.write(queue._writer.fileno(), struct.pack("!i", 1 << 20) + bytes(4096))
    if marker:
        Path(marker).write_text("torn")
    time.sleep(3600)
