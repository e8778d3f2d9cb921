"""Stage recipes for the Ray tests; importable by Ray workers (the repository root is on their path)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ppt.exec.recipes import SanitizeRecipe
from ppt.stages.base import Stage


class _KillOnce(Stage):
    name = "sanitize"

    def __init__(self, inner: Stage, marker, flag: str) -> None:
        self.inner, self.marker, self.flag = inner, marker, flag

    def prepare(self) -> None:
        self.inner.prepare()

    def signature(self):
        return self.inner.signature()

    def __call__(self, records):
        if any(r.id == self.marker for r in records):
            try:
                fd = os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:  # the first actor to see the marker dies mid-run, without any cleanup
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os._exit(1)
        return self.inner(records)


@dataclass
class KillOnceRecipe:
    """A sanitize recipe whose stage kills its actor process (os._exit) the first time it meets the record
    with id ``marker``; ``flag`` (a file) records that it did, so the retry goes through."""

    recipe: SanitizeRecipe
    marker: object
    flag: str

    def __call__(self) -> Stage:
        return _KillOnce(self.recipe(), self.marker, self.flag)


class _Slow(Stage):
    name = "sanitize"

    def __init__(self, inner: Stage, seconds: float) -> None:
        self.inner, self.seconds = inner, seconds

    def prepare(self) -> None:
        self.inner.prepare()

    def signature(self):
        return self.inner.signature()

    def __call__(self, records):
        import time

        time.sleep(self.seconds)
        return self.inner(records)


@dataclass
class SlowRecipe:
    """A sanitize recipe whose stage sleeps ``seconds`` before each batch: a job still running when a test
    signals it."""

    recipe: SanitizeRecipe
    seconds: float

    def __call__(self) -> Stage:
        return _Slow(self.recipe(), self.seconds)
