"""`ppt restore`: put the real values back into an answer (after `ppt sanitize --protect detected --mapping`)."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from ppt.cli.kit import STREAM, StreamArgs, stream_command

HELP = """Replace the surrogates in each record's answer by the real values kept in its --mapping field.

Runs where the mapping is (it holds the raw values); the output is local too.

Example: ppt sanitize --protect detected --deny names.txt --mapping map -i docs.jsonl | ppt query ... | ppt restore
"""


# the text field of the stream is --field; the output holds the real values (created 0600)
@stream_command(omit={"text_field", "device"}, require_text=False, private=True)
def restore(
    field: Annotated[str, typer.Option("--field", help="The answer to restore (ppt query writes 'generation').")] = (
        "generation"
    ),
    mapping_field: Annotated[
        str | None,
        typer.Option(
            "--mapping-field", help="The field `ppt sanitize --mapping` wrote (default: the one its stamp names)."
        ),
    ] = None,
    output_field: Annotated[str, typer.Option("--output-field", help="Where the restored answer goes.")] = "restored",
    stream: StreamArgs = STREAM,
) -> None:
    from ppt.io import run_stream
    from ppt.stages.restore import RestoreStage

    stage = RestoreStage(field=field, mapping_field=mapping_field, output_field=output_field)
    raise typer.Exit(run_stream(dataclasses.replace(stream, text_field=field), stage, desc="restore"))


def register(app: typer.Typer) -> None:
    app.command("restore", help=HELP, short_help="Put the real values back into an answer (--protect detected).")(
        restore
    )
