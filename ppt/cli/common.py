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
    typer.Option(
        "--input",
        "-i",
        help="Input file ('-' reads stdin): JSONL, or JSONL.gz/.zst, CSV or Parquet by its name (--input-format).",
        rich_help_panel=IO_PANEL,
    ),
]
OutputOpt = Annotated[
    str,
    typer.Option(
        "--output",
        "-o",
        help="Output: '-' writes stdout; a regular file is replaced atomically and keeps its mode, in the format "
        "its name says (.jsonl, .jsonl.gz, .jsonl.zst, .csv, .parquet; --output-format); devices, FIFOs, "
        "/dev/fd/N (e.g. >(gzip > x.gz)) and symlink targets are written through.",
        rich_help_panel=IO_PANEL,
    ),
]
# the formats of -i/-o (ppt.io.formats.NAMES, kept equal by tests/cli/test_formats_flags.py), or auto
Format = Literal["auto", "jsonl", "jsonl.gz", "jsonl.zst", "csv", "parquet"]
InputFormatOpt = Annotated[
    Format,
    typer.Option(
        "--input-format",
        metavar="FORMAT",
        help="Read --input as jsonl, jsonl.gz, jsonl.zst, csv or parquet. auto: from the file's name, else from its "
        "first bytes (gzip, zstd and Parquet have a signature); stdin from a pipe is JSONL unless named here. "
        "Parquet from a pipe is first copied to a temporary file ($TMPDIR): its index is at its end.",
        rich_help_panel=IO_PANEL,
    ),
]
OutputFormatOpt = Annotated[
    Format,
    typer.Option(
        "--output-format",
        metavar="FORMAT",
        help="Write --output as jsonl, jsonl.gz, jsonl.zst, csv or parquet, to a file of any name, stdout or a "
        "pipe. auto: from the file's name, else JSONL. CSV and Parquet are written when the run ends (a "
        "column per field of any record; nested values as JSON text).",
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
        help="local: this process (default); ray: a Ray cluster (`pip install 'ppt-private-prompts\\[ray]'`), "
        "--input a file, directory or glob of JSONL/Parquet shards, --output a directory of JSONL shards + summary.json.",
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
        help="Worker processes for the batches. Default: 1, unless -i is a file of at least 8 MiB and the "
        "machine has 2 or more spare cores (the cores available less the 1-minute load average): then one per "
        "spare core; 1 on a GPU. Output is the same for any N; an input of one batch starts none.",
        rich_help_panel=RUN_PANEL,
    ),
]
# --workers left out: workers only for an input this large (a file), where their start-up (the fork server's
# imports, each worker's stage) is paid back; bench/workers.py measures it
AUTO_WORKERS_MIN_BYTES = 8 << 20


def spare_cores(cores: int) -> int:
    """The cores not already busy: ``cores`` less the 1-minute load average, rounded (``cores`` where the
    load is unknown)."""
    import os

    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores
    return max(0, int(cores - busy + 0.5))


def auto_workers(source: str, most: int) -> int:
    """The workers of a run whose --workers was left out: 1 unless ``source`` (-i) is a regular file of at
    least AUTO_WORKERS_MIN_BYTES and at least 2 cores are spare; then the spare cores, at most ``most`` (the
    pool's own default: the cores available, 1 on a GPU). More workers than idle cores only add start-up and
    contention: on a busy 2-core machine the old default (the cores) ran 14-18% slower than 1 worker."""
    import os
    import stat

    if most <= 1 or source in ("-", ""):
        return 1
    try:
        st = os.stat(source)
    except OSError:
        return 1
    if not stat.S_ISREG(st.st_mode) or st.st_size < AUTO_WORKERS_MIN_BYTES:
        return 1
    spare = min(most, spare_cores(most))
    return spare if spare >= 2 else 1


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
    input_format: str = "auto",
    output_format: str = "auto",
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
        input_format=getattr(input_format, "value", input_format),
        output_format=getattr(output_format, "value", output_format),
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
