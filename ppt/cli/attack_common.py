"""What the `ppt attack` subcommands share: their options (raw-text field, space, alignment, summary) and
the run that writes the summary record."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from ppt.cli.common import NullSink, write_summary
from ppt.io.args import StreamArgs

ATTACK_PANEL = "Attack"

# the choices of ppt.stages.attack.STOPWORD_MODES (tests/cli/test_choices.py keeps them equal)
StopwordMode = Literal["auto", "include", "exclude"]

OriginalOpt = Annotated[
    str | None,
    typer.Option(
        "--original-field", help="Field with the raw (original) text; read by the attack.", rich_help_panel=ATTACK_PANEL
    ),
]
SummaryOpt = Annotated[
    str,
    typer.Option(
        "--summary",
        help="Where the summary record goes: stderr, stdout (appended as the last JSONL line), a file path, or none.",
        rich_help_panel=ATTACK_PANEL,
    ),
]
SummaryOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--summary-only",
        help="Write only the summary record, on stdout (no per-record output).",
        rich_help_panel=ATTACK_PANEL,
    ),
]
ResultFieldOpt = Annotated[
    str,
    typer.Option(
        "--result-field",
        help="Object field that collects per-record results under the attack's name.",
        rich_help_panel=ATTACK_PANEL,
    ),
]
SpaceOpt = Annotated[
    str | None,
    typer.Option(
        "--space",
        help="Embedding space to attack in (default: the one in each record's ppt.sanitize stamp).",
        rich_help_panel=ATTACK_PANEL,
    ),
]
AlignFieldOpt = Annotated[
    str,
    typer.Option(
        "--alignment-field",
        help="Per-record \\[\\[orig_row, new_row, start, end], ...] from the sanitizer, used when present.",
        rich_help_panel=ATTACK_PANEL,
    ),
]
StopwordsOpt = Annotated[
    StopwordMode,
    typer.Option(
        "--stopwords",
        help="Text alignment only: score stopwords (include), leave them out (exclude), or exclude when the stamp says the mechanism kept them (auto).",
        rich_help_panel=ATTACK_PANEL,
    ),
]


def check_summary_target(target: str) -> None:
    """A --summary file must go into an existing directory: checked before any model loads."""
    import os

    from ppt.io import ExitCode, PptError

    if target in ("stderr", "stdout", "-", "none"):
        return
    d = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(d):
        raise PptError(f"summary directory does not exist: {d}", ExitCode.IOERR, hint="create it first")


def run_attack(runner, stream: StreamArgs, desc: str, summary: str, summary_only: bool) -> int:
    """Stream the records through ``runner``, then write its summary record to --summary (on stdout, alone,
    with --summary-only); returns the exit code."""
    from ppt.io import run_stream
    from ppt.stages.attack import summary_record

    code = run_stream(stream, runner, desc=desc, _stdout=NullSink() if summary_only else None)
    write_summary(summary_record(runner), "stdout" if summary_only else summary)
    return code


def token_aligner(space, original_field, alignment_field, stopwords, device, quiet):
    """The token pairing of the KNN and MTI attacks, prepared (a bad --space fails before input is opened)."""
    from ppt.io import stdout_guard
    from ppt.stages.attack import SpaceCache, TokenAligner

    aligner = TokenAligner(SpaceCache(device=device, quiet=quiet), space, original_field, alignment_field, stopwords)
    with stdout_guard():
        aligner.prepare()
    return aligner
