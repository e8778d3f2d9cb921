"""The cache as a cluster sees it: read-only. Tables are built once (``ppt precompute``, or a local run of
the same stage, on the head node or into shared storage); a worker never builds one, so N workers can
never race to build the same table, and a missing table fails the job before it starts.

``ppt.cache`` has no read-only switch of its own, so within :func:`read_only_cache` a miss of
``Cache.get_or_build`` raises instead of building (hits are unchanged: lock-free, nothing written).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ppt.io import ExitCode, PptError


@contextlib.contextmanager
def read_only_cache(hint: str | None = None) -> Iterator[None]:
    """Within: a cache miss (absent or damaged artifact) raises PptError 78 naming it, with ``hint``
    (the command that builds it). For one process's setup (a stage's ``prepare()``), not for threads."""
    from ppt.cache import Cache

    original = Cache.get_or_build

    def get_or_build(self, kind, deps, build, *, deep=True, on_rebuild=None):
        art = self.lookup(kind, deps, deep=deep)
        if art is None:
            raise PptError(
                f"the cache at {self.root} has no usable {kind} artifact for this job; "
                "cluster workers read the cache and never build it",
                ExitCode.CONFIG,
                hint=hint,
            )
        return art

    Cache.get_or_build = get_or_build
    try:
        yield
    finally:
        Cache.get_or_build = original
