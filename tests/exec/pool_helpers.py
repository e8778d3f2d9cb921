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
    ``fail_on``: the id of a record whose batch raises ValueError quoting the record text."""

    cache_dir: str
    mech: str = "rantext"
    eps: float = 3.0
    seed: int | None = 7
    min_kept: int = 0
    emit_alignment: str | None = None
    kill_on: object = None
    fail_on: object = None

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
        if self.kill_on is None and self.fail_on is None:
            return stage
        return _Sabotage(stage, self.kill_on, self.fail_on)


class _Sabotage(Stage):
    name = "sanitize"

    def __init__(self, inner, kill_on, fail_on) -> None:
        self.inner, self.kill_on, self.fail_on = inner, kill_on, fail_on

    def prepare(self) -> None:
        self.inner.prepare()

    def signature(self):
        return self.inner.signature()

    def __call__(self, records):
        ids = {r.id for r in records}
        if self.kill_on in ids and multiprocessing.parent_process() is not None:  # a worker: die, no cleanup
            os._exit(3)
        if self.fail_on in ids:
            raise ValueError("boom: " + " ".join(r.text or "" for r in records))
        return self.inner(records)
