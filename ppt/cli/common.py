"""Options, choices, error handling and small helpers shared by the subcommands, so flags and failure output
look the same everywhere.

A stream subcommand takes the shared stream options from the kit (``ppt.cli.kit.stream_command``); another
command uses the aliases here (``DeviceOpt``, ``QuietOpt``, ``SeedOpt``, ...) and ``@handle_errors`` or
``with handle_errors():``. A flag with fixed values is a ``Literal[...]`` (typer checks it; the man pages
and completions list the values).
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal, NoReturn, TypeVar, overload

import typer

from ppt.io.args import StreamArgs
from ppt.io.errors import PptError, Terminated
from ppt.io.exitcodes import ExitCode
from ppt.io.stdout import ensure_std_fds

# before anything opens a file: a closed fd 0/1/2 (`<&-`, `>&-`, `2>&-`) is pointed at /dev/null so no
# file lands on it; `-` input/output is then refused with exit 66/74, and a closed stderr drops messages
ensure_std_fds()

IO_PANEL = "Input / output"
RUN_PANEL = "Run"

_DEVICE_RE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")


def _check_device(value: str) -> str:
    if not _DEVICE_RE.fullmatch(value):
        raise typer.BadParameter("expected auto, cpu, mps, cuda or cuda:N")
    return value


InputOpt = Annotated[
    str,
    typer.Option("--input", "-i", help="Input JSONL file; '-' reads stdin.", rich_help_panel=IO_PANEL),
]
OutputOpt = Annotated[
    str,
    typer.Option(
        "--output",
        "-o",
        help="Output JSONL: '-' writes stdout; a regular file is replaced atomically and keeps its mode; "
        "devices, FIFOs, /dev/fd/N (e.g. >(gzip > x.gz)) and symlink targets are written through.",
        rich_help_panel=IO_PANEL,
    ),
]
TextFieldOpt = Annotated[
    str, typer.Option("--text-field", help="Field holding the text of each record.", rich_help_panel=IO_PANEL)
]
IdFieldOpt = Annotated[
    str,
    typer.Option(
        "--id-field", help="Field holding the record id (missing: 0-based line number).", rich_help_panel=IO_PANEL
    ),
]
OnErrorOpt = Annotated[
    Literal["fail", "skip", "record"],
    typer.Option(
        "--on-error",
        help="Bad record: fail (stop, exit 65), skip (drop, exit 1), record (emit an error object, exit 1).",
        rich_help_panel=IO_PANEL,
    ),
]
BatchSizeOpt = Annotated[
    int, typer.Option("--batch-size", min=1, help="Records processed per batch.", rich_help_panel=RUN_PANEL)
]
SeedOpt = Annotated[
    int | None,
    typer.Option(
        "--seed",
        help="Derive per-record noise from (seed, id) for reproducibility; research only, not production.",
        rich_help_panel=RUN_PANEL,
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar or summary on stderr.", rich_help_panel=RUN_PANEL)
]
DeviceOpt = Annotated[
    str,
    typer.Option("--device", callback=_check_device, help="auto, cpu, mps, cuda or cuda:N.", rich_help_panel=RUN_PANEL),
]

EngineOpt = Annotated[
    Literal["local", "ray"],
    typer.Option(
        "--engine",
        help="local: this process (default); ray: a Ray cluster (`pip install 'ppt\\[ray]'`), --input a file, "
        "directory or glob of JSONL/Parquet shards, --output a directory of JSONL shards + summary.json.",
        rich_help_panel=RUN_PANEL,
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Ray cluster to join (HOST:6379, ray://HOST:10001; default: $RAY_ADDRESS, else a new local cluster).",
        rich_help_panel=RUN_PANEL,
    ),
]
ActorsOpt = Annotated[
    int | None,
    typer.Option(
        "--actors", min=1, help="Ray actors (default: one per GPU, else one per CPU).", rich_help_panel=RUN_PANEL
    ),
]

WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=1,
        help="Worker processes for the batches (default: the cores available; 1 on a "
        "GPU). Output is the same for any N; an input of one batch starts none.",
        rich_help_panel=RUN_PANEL,
    ),
]


# choices the library also lists (ppt.lm.door.RUNTIMES, ppt.remote.backends.ENDPOINTS); tests/cli/test_choices.py
# keeps them equal
Runtime = Literal["transformers", "vllm"]
Endpoint = Literal["chat", "completions"]


def check_engine(engine: str, ray_address: str | None, actors: int | None) -> None:
    """--ray-address and --actors only mean something with --engine ray."""
    if engine != "ray" and (ray_address is not None or actors is not None):
        raise PptError("--ray-address and --actors need --engine ray", exit_code=ExitCode.USAGE)


def stream_args(
    *,
    input: str = "-",  # noqa: A002 - mirrors the --input flag
    output: str = "-",
    text_field: str | list[str] = "text",
    id_field: str = "id",
    on_error: str = "fail",
    batch_size: int = 64,
    quiet: bool = False,
    device: str = "auto",
    require_text: bool = True,
    private: bool = False,
) -> StreamArgs:
    """Bundle the shared flags into the one StreamArgs that run_stream and the stages take."""
    from ppt.progress import set_run_quiet

    set_run_quiet(quiet)  # what never sees the flag (model loads: transformers' bar) keeps quiet too
    fields: tuple[str, ...] = ()
    if isinstance(text_field, (list, tuple)):  # a command that takes several (--text-field a --text-field b)
        fields = tuple(dict.fromkeys(text_field)) or ("text",)
        text_field = fields[0]
    return StreamArgs(
        input=input,
        output=output,
        text_field=text_field,
        text_fields=fields,
        id_field=id_field,
        on_error=getattr(on_error, "value", on_error),
        batch_size=batch_size,
        quiet=quiet,
        require_text=require_text,
        device=device,
        private=private,
    )


def parse_params(items: list[str]) -> dict:
    """``--param KEY=VALUE`` items as a dict: VALUE read as JSON where it parses (``w=0.9`` -> 0.9), else
    the string; ``-`` in KEY becomes ``_``."""
    import orjson

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise PptError(f"--param expects KEY=VALUE (got {item!r})", exit_code=ExitCode.USAGE)
        try:
            out[key.replace("-", "_")] = orjson.loads(value)
        except orjson.JSONDecodeError:
            out[key.replace("-", "_")] = value
    return out


class NullSink:
    """A stdout that drops what it is given (``run_stream(..., _stdout=NullSink())``: a summary-only run)."""

    def write(self, data: Any) -> None:
        pass

    def flush(self) -> None:
        pass


def write_summary(obj: dict, target: str) -> None:
    """Write a summary object to stderr, stdout, a file (through the -o sink), or nowhere (``none``)."""
    from ppt.io import dumps_line, real_stdout

    line = dumps_line(obj)
    if target == "none":
        return
    if target == "stderr":
        sys.stderr.write(line.decode())
        sys.stderr.flush()
        return
    if target in ("stdout", "-"):
        out = real_stdout()
        try:
            out.buffer.write(line) if hasattr(out, "buffer") else out.write(line.decode())
            out.flush()
        except BrokenPipeError:
            pass
        return
    # a file goes through the same sink as -o: devices, FIFOs and symlinks written through, regular
    # files replaced atomically with their mode kept
    from ppt.io.sinks import write_lines

    write_lines(target, [line])


def warn(message: str) -> None:
    """A warning on stderr in the one format all subcommands use."""
    print(f"ppt: warning: {message}", file=sys.stderr, flush=True)


def report(err: PptError) -> None:
    """Print a fatal error (and how to fix it) to stderr."""
    print(f"ppt: error: {err.message}", file=sys.stderr)
    if err.hint:
        print(f"  hint: {err.hint}", file=sys.stderr)
    sys.stderr.flush()


def fail(err: PptError) -> NoReturn:
    """Report ``err`` and exit with its code."""
    report(err)
    raise typer.Exit(int(err.exit_code))


@contextlib.contextmanager
def _guard() -> Iterator[None]:
    try:
        yield
    except PptError as err:
        fail(err)
    except KeyboardInterrupt:
        with contextlib.suppress(OSError, ValueError):
            print("\nppt: interrupted", file=sys.stderr, flush=True)
        raise typer.Exit(130) from None
    except Terminated as sig:  # SIGTERM / SIGHUP during a run: output cleaned up, exit like a shell reports it
        with contextlib.suppress(OSError, ValueError):
            print("ppt: terminated", file=sys.stderr, flush=True)
        raise typer.Exit(128 + sig.signum) from None
    except BrokenPipeError:
        from ppt.io.stdout import silence_stdout

        silence_stdout()
        raise typer.Exit(int(ExitCode.OK)) from None


F = TypeVar("F", bound=Callable[..., Any])


@overload
def handle_errors(func: F) -> F: ...
@overload
def handle_errors(func: None = None) -> contextlib.AbstractContextManager[None]: ...
def handle_errors(func: F | None = None) -> Any:
    """Turn PptError into ``ppt: error: ...`` + hint and its exit code, Ctrl-C into exit 130, and a
    closed stdout into a quiet exit 0. Use as ``@handle_errors`` on a command or ``with handle_errors():``.
    The decorator keeps the signature, so typer still sees the options."""
    if func is None:
        return _guard()

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _guard():
            return func(*args, **kwargs)

    return wrapper


def check_resume_target(resume: str, output: str) -> None:
    """The journal must not also be where the output goes: `> FILE` truncates it before ppt starts, and
    appending the same records twice would duplicate them."""
    import os
    import sys

    from ppt.io import ExitCode, PptError

    hint = "keep the journal separate: --resume journal.jsonl -o out.jsonl (or > out.jsonl)"
    if output != "-" and os.path.abspath(output) == os.path.abspath(resume):
        raise PptError("--resume and --output name the same file", ExitCode.USAGE, hint=hint)
    if output == "-" and os.path.exists(resume):
        try:
            out_stat, journal_stat = os.fstat(sys.stdout.fileno()), os.stat(resume)
        except (OSError, ValueError, AttributeError):
            return
        if (out_stat.st_dev, out_stat.st_ino) == (journal_stat.st_dev, journal_stat.st_ino):
            raise PptError("stdout is redirected to the --resume journal itself", ExitCode.USAGE, hint=hint)
