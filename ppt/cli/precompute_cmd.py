"""`ppt precompute`: build and cache an embedding space and the tables mechanisms need."""

from __future__ import annotations

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
    space: Annotated[
        str,
        typer.Argument(help="Space name: cl100k-minilm\\[:N], glove-6b-50d\\[:N], minilm, smollm2, or a model path."),
    ] = "cl100k-minilm",
    table: Annotated[
        list[str], typer.Option("--table", "-t", help="Tables to build: auto, sorted-rows, topk, none (repeatable).")
    ] = ["auto"],
    k: Annotated[int, typer.Option("--k", min=1, help="Neighbours per row for the topk table.")] = 100,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        import orjson

        from ppt.stages.precompute import precompute as run

        run(space, table, k=k, device=device, quiet=quiet, emit=lambda line: typer.echo(orjson.dumps(line).decode()))


def register(app: typer.Typer) -> None:
    app.command("precompute", help=HELP, short_help="Build and cache an embedding space and its distance tables.")(
        precompute
    )
