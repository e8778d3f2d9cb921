"""`ppt restore`: put the real values back into an answer (after `ppt sanitize --protect detected --mapping`)."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import (
    BatchSizeOpt,
    IdFieldOpt,
    InputOpt,
    OnErrorOpt,
    OutputOpt,
    QuietOpt,
    handle_errors,
    stream_args,
)

HELP = """Replace the surrogates in each record's answer by the real values kept in its --mapping field.

Runs where the mapping is (it holds the raw values); the output is local too.

Example: ppt sanitize --protect detected --deny names.txt --mapping map -i docs.jsonl | ppt query ... | ppt restore
"""


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
    input: InputOpt = "-",  # noqa: A002
    output: OutputOpt = "-",
    id_field: IdFieldOpt = "id",
    on_error: OnErrorOpt = "fail",
    batch_size: BatchSizeOpt = 64,
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        from ppt.io import run_stream
        from ppt.stages.restore import RestoreStage

        stage = RestoreStage(field=field, mapping_field=mapping_field, output_field=output_field)
        args = stream_args(
            input=input,
            output=output,
            text_field=field,
            id_field=id_field,
            on_error=on_error,
            batch_size=batch_size,
            quiet=quiet,
            require_text=False,
            private=True,
        )
        raise typer.Exit(run_stream(args, stage, desc="restore"))


def register(app: typer.Typer) -> None:
    app.command("restore", help=HELP, short_help="Put the real values back into an answer (--protect detected).")(
        restore
    )
