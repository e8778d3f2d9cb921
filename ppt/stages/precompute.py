"""`ppt precompute`: build and cache an embedding space and the distance tables mechanisms need, and
describe each artifact (kind, key, path, content hash, bytes, seconds) for the caller to print."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from ppt.io import PptError

TABLES = ("auto", "sorted-rows", "topk", "none")


def artifact_line(art, seconds: float) -> dict:
    from ppt.cache import dir_size

    return {
        "artifact": art.kind,
        "key": art.key,
        "path": str(art.path),
        "hash": art.content_hash,
        "bytes": dir_size(art.path),
        "seconds": round(seconds, 3),
    }


def precompute(
    space: str,
    tables: Iterable[str] = ("auto",),
    *,
    k: int = 100,
    device: str = "auto",
    quiet: bool = False,
    emit: Callable[[dict], None],
) -> None:
    """Load (building if needed) ``space`` and the wanted tables; ``emit`` gets one line per artifact,
    as soon as it is ready."""
    from ppt.spaces import load_space
    from ppt.spaces.space import SORTED_ROWS_MAX_VOCAB

    table = list(tables)
    bad = set(table) - set(TABLES)
    if bad:
        raise PptError(f"unknown table {sorted(bad)[0]!r}", hint="use --table sorted-rows, topk, auto or none")
    try:
        t0 = time.perf_counter()
        sp = load_space(space, device=device, quiet=quiet)
    except ValueError as e:
        raise PptError(str(e), hint="see `ppt precompute --help` for space names") from None
    emit(artifact_line(sp.artifact, time.perf_counter() - t0))
    wanted = set(table)
    if "auto" in wanted:
        wanted.discard("auto")
        wanted.add("sorted-rows" if sp.size <= SORTED_ROWS_MAX_VOCAB else "topk")
    if "sorted-rows" in wanted:
        if sp.size > SORTED_ROWS_MAX_VOCAB:
            raise PptError(f"{sp.name} has {sp.size} rows, too many for full sorted rows", hint="use --table topk")
        t0 = time.perf_counter()
        rows = sp.sorted_rows(quiet=quiet)
        emit(artifact_line(rows.artifact, time.perf_counter() - t0))
    if "topk" in wanted:
        t0 = time.perf_counter()
        sp.topk(k, quiet=quiet)
        art = sp.cache.lookup("topk", sp._table_deps("topk", k=k), deep=False)
        emit(artifact_line(art, time.perf_counter() - t0))
