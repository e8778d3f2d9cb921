"""The stream-command kit: the options every JSONL stream subcommand shares, declared once.

``@stream_command(...)`` adds ``--input``, ``--output``, ``--input-format``, ``--output-format``,
``--text-field``, ``--id-field``, ``--on-error``, ``--batch-size``, ``--device`` and ``--quiet`` to a command's
typer signature, in that order, where the
command has its ``stream`` parameter, then ``--report FILE`` (a JSON report of the run:
:mod:`ppt.io.run_report`), and calls the command with one ready :class:`StreamArgs` in ``stream`` (inside
:func:`handle_errors` and, under --report, the report's collector). The command keeps only its own options::

    @stream_command(batch_size=8, omit={"device"})
    def foo(k: Annotated[int, typer.Option("--k")] = 1, stream: StreamArgs = STREAM) -> None:
        stage = FooStage(k, stream.text_field)
        raise typer.Exit(run_stream(stream, stage, desc="foo"))

Per command: another default (``batch_size=8``), no such option (``omit={"device"}``: the StreamArgs
field keeps the value given here, else its default; a command without ``--input`` or ``--output`` has no
format flag for it either; ``omit={"report"}`` for a command that does not run
``run_stream``), another declaration (``batch_size=custom(
Annotated[int | None, typer.Option(...)], None)``), and the two StreamArgs fields that are not flags
(``require_text``, ``private``). A value the command works out later (a model's batch size, a text field
named by another flag) goes in with ``dataclasses.replace(stream, ...)``.

The command's annotations are resolved when it is decorated, from its module's globals (``StreamArgs``
included): an alias the command uses must be defined, or imported, above it.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import typer

from ppt.cli.common import (
    RUN_PANEL,
    BatchSizeOpt,
    DeviceOpt,
    IdFieldOpt,
    InputFormatOpt,
    InputOpt,
    OnErrorOpt,
    OutputFormatOpt,
    OutputOpt,
    QuietOpt,
    TextFieldOpt,
    handle_errors,
    stream_args,
)
from ppt.io.args import StreamArgs
from ppt.io.run_report import collecting

__all__ = ["REPORT", "SHARED", "STREAM", "SharedOption", "StreamArgs", "custom", "stream_command"]

F = TypeVar("F", bound=Callable[..., Any])

# the default of a command's `stream` parameter, only so that it may follow options with defaults: the kit
# always passes the StreamArgs built from the flags
STREAM: Any = None


@dataclass(frozen=True)
class SharedOption:
    """One shared option: its typer declaration (``Annotated[type, typer.Option(...)]``) and default."""

    annotation: Any
    default: Any


def custom(annotation: Any, default: Any) -> SharedOption:
    """A shared option declared differently in one command (its own help or type), e.g. a ``--batch-size``
    whose default None means "the model's"."""
    return SharedOption(annotation, default)


# the shared options, in the order they are listed in every command
SHARED: dict[str, SharedOption] = {
    "input": SharedOption(InputOpt, "-"),
    "output": SharedOption(OutputOpt, "-"),
    "input_format": SharedOption(InputFormatOpt, "auto"),
    "output_format": SharedOption(OutputFormatOpt, "auto"),
    "text_field": SharedOption(TextFieldOpt, "text"),
    "id_field": SharedOption(IdFieldOpt, "id"),
    "on_error": SharedOption(OnErrorOpt, "fail"),
    "batch_size": SharedOption(BatchSizeOpt, 64),
    "device": SharedOption(DeviceOpt, "auto"),
    "quiet": SharedOption(QuietOpt, False),
}

ReportOpt = Annotated[
    str | None,
    typer.Option(
        "--report",
        metavar="FILE",
        help="After the run, write a JSON report to FILE: counts by outcome and error type, elapsed time and "
        "records/s, versions, the stage's signature and, for sanitize, the eps and token distributions read "
        "from the stamps. No record text (but see sanitize's --report-sample). Render it with "
        "`ppt report FILE -o report.html`.",
        rich_help_panel=RUN_PANEL,
    ),
]
# the kit's own option, listed after the shared ones: not a StreamArgs field (the run reports to a collector)
REPORT = SharedOption(ReportOpt, None)


def stream_command(
    *, omit: Iterable[str] = (), require_text: bool = True, private: bool = False, **defaults: Any
) -> Callable[[F], F]:
    """Give a command the shared stream options and call it with ``stream=StreamArgs(...)``.

    ``defaults``: a shared option's default (``batch_size=32``), or its whole declaration (``custom(...)``);
    for an omitted option, the value its StreamArgs field takes. ``omit``: shared options (or ``"report"``,
    the kit's --report) this command does not offer. ``require_text``/``private``: the StreamArgs fields of the same names."""
    omit = frozenset(omit)
    # no format flag for a file the command does not take
    omit |= {f"{side}_format" for side in ("input", "output") if side in omit}
    unknown = (set(defaults) | omit) - set(SHARED) - {"report"}
    if unknown:
        raise TypeError(f"not a shared stream option: {', '.join(sorted(unknown))} (known: {', '.join(SHARED)})")
    declared = {
        name: defaults[name]
        if isinstance(defaults.get(name), SharedOption)
        else SharedOption(spec.annotation, defaults.get(name, spec.default))
        for name, spec in SHARED.items()
        if name not in omit
    }
    if "report" not in omit:
        declared["report"] = defaults["report"] if isinstance(defaults.get("report"), SharedOption) else REPORT
    fixed = {name: value for name, value in defaults.items() if name in omit and name != "report"}

    def decorate(func: F) -> F:
        # typer reads __signature__ as it is (no string evaluation) and __annotations__ through
        # get_type_hints: both must hold the real objects, resolved here in the command's module
        hints = typing.get_type_hints(func, include_extras=True)
        own = inspect.signature(func).parameters
        if "stream" not in own:
            raise TypeError(f"{func.__name__}: a @stream_command takes a `stream: StreamArgs` parameter")
        clash = set(declared) & set(own)
        if clash:
            raise TypeError(f"{func.__name__}: {', '.join(sorted(clash))} is a shared stream option")
        params = []
        for name, p in own.items():
            if name == "stream":
                params += [
                    inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=d.annotation, default=d.default)
                    for n, d in declared.items()
                ]
            else:
                params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(name, p.annotation)))

        @functools.wraps(func)
        def command(**kwargs: Any) -> Any:
            report = kwargs.pop("report", None)
            shared = {name: kwargs.pop(name) for name in declared if name != "report"}
            stream = stream_args(**fixed, **shared, require_text=require_text, private=private)
            with handle_errors(), collecting(report) as collector:
                _formats_need_local(kwargs.get("engine"), stream)
                try:
                    return func(**kwargs, stream=stream)
                except typer.Exit as exc:
                    if collector is not None and not collector.finished and exc.exit_code == 0:
                        _no_report(collector.path)
                    raise

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return decorate


def _formats_need_local(engine: Any, stream: StreamArgs) -> None:
    """--engine ray reads JSONL/Parquet shards by their names and writes JSONL shards: a format flag there
    would be ignored, so it is refused."""
    if getattr(engine, "value", engine) == "ray":
        flags = [
            flag
            for flag, value in (("--input-format", stream.input_format), ("--output-format", stream.output_format))
            if value != "auto"
        ]
        if flags:
            from ppt.io import ExitCode, PptError

            raise PptError(
                f"{' and '.join(flags)}: only with --engine local",
                ExitCode.USAGE,
                hint="--engine ray reads JSONL or Parquet shards by their names and writes JSONL shards",
            )


def _no_report(path: str) -> None:
    """A command that ended well without a stream run (e.g. --engine ray): say that no report was written."""
    typer.echo(
        f"ppt: warning: --report: no report written to {path} (this run did not go through the local stream runner)",
        err=True,
    )
