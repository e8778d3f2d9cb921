"""`ppt precompute`: build and cache an embedding space and the tables mechanisms need."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from ppt.cli.common import DeviceOpt, QuietOpt, handle_errors

HELP = """Build and cache an embedding space and its distance tables (on the GPU when there is one).

Tables: [bold]sorted-rows[/] (every row's neighbours in distance order; vocabularies up to 20k rows,
RANTEXT's fast path) and [bold]topk[/] (the K nearest neighbours; any size). Each artifact prints one JSON
line on stdout (kind, key, path, content hash, bytes, seconds). Artifacts live under $PPT_CACHE.

[bold]Examples[/]
  ppt precompute cl100k-minilm                 # RANTEXT's default space + sorted rows
  ppt precompute glove-6b-50d:50000 --table topk --k 100
  ppt precompute smollm2 --table none          # just the space
"""


def precompute(
    space: Annotated[str, typer.Argument(help="Space name: cl100k-minilm[:N], glove-6b-50d[:N], minilm, smollm2, or a model path.")] = "cl100k-minilm",
    table: Annotated[list[str], typer.Option("--table", "-t", help="Tables to build: auto, sorted-rows, topk, none (repeatable).")] = ["auto"],
    k: Annotated[int, typer.Option("--k", min=1, help="Neighbours per row for the topk table.")] = 100,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        import orjson

        from ppt.cache import dir_size
        from ppt.io import PptError
        from ppt.spaces import load_space
        from ppt.spaces.space import SORTED_ROWS_MAX_VOCAB

        def emit(art, seconds: float) -> None:
            line = {"artifact": art.kind, "key": art.key, "path": str(art.path), "hash": art.content_hash,
                    "bytes": dir_size(art.path), "seconds": round(seconds, 3)}
            typer.echo(orjson.dumps(line).decode())

        bad = set(table) - {"auto", "sorted-rows", "topk", "none"}
        if bad:
            raise PptError(f"unknown table {sorted(bad)[0]!r}", hint="use --table sorted-rows, topk, auto or none")
        try:
            t0 = time.perf_counter()
            sp = load_space(space, device=device, quiet=quiet)
        except ValueError as e:
            raise PptError(str(e), hint="see `ppt precompute --help` for space names") from None
        emit(sp.artifact, time.perf_counter() - t0)
        wanted = set(table)
        if "auto" in wanted:
            wanted.discard("auto")
            wanted.add("sorted-rows" if sp.size <= SORTED_ROWS_MAX_VOCAB else "topk")
        if "sorted-rows" in wanted:
            if sp.size > SORTED_ROWS_MAX_VOCAB:
                raise PptError(f"{sp.name} has {sp.size} rows, too many for full sorted rows", hint="use --table topk")
            t0 = time.perf_counter()
            rows = sp.sorted_rows(quiet=quiet)
            emit(rows.artifact, time.perf_counter() - t0)
        if "topk" in wanted:
            t0 = time.perf_counter()
            sp.topk(k, quiet=quiet)
            art = sp.cache.lookup("topk", sp._table_deps("topk", k=k), deep=False)
            emit(art, time.perf_counter() - t0)


def register(app: typer.Typer) -> None:
    app.command("precompute", help=HELP, short_help="Build and cache an embedding space and its distance tables.")(precompute)
