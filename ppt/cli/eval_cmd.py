"""`ppt eval METRICS`: utility and privacy metrics over JSONL (summary JSON on stdout), and the `ppt eval`
group: the experiment drivers (sweep, pipeline, downstream) are in eval_experiments.py, the other privacy
measures (phr, make-pii, mi, mapping) in eval_privacy.py.

`eval` is a group whose default command is `metrics`, so `ppt eval coherence,diversity < f.jsonl`
and `ppt eval metrics coherence,diversity < f.jsonl` are the same.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import typer
from typer.core import TyperGroup

from ppt.cli.common import NullSink, write_summary
from ppt.cli.eval_experiments import DOWNSTREAM_HELP, PIPELINE_HELP, SWEEP_HELP, downstream, pipeline, sweep
from ppt.cli.eval_privacy import FIELDS_PANEL, PHR_HELP, make_pii_cmd, mapping, mi, phr_cmd
from ppt.cli.kit import STREAM, StreamArgs, stream_command

MODELS_PANEL = "Models"
METRIC_PANEL = "Metric settings"


class _DefaultMetrics(TyperGroup):
    """Route `ppt eval <metrics> ...` to the `metrics` subcommand."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["metrics", *args]
        return super().parse_args(ctx, args)


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


@stream_command(omit={"output"})
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
        Literal["lm", "encoder"],
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
        Literal["product", "sum"],
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
    stream: StreamArgs = STREAM,
) -> None:
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
        device=stream.device,
        batch_size=min(stream.batch_size, 32),
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
    args = dataclasses.replace(stream, output=per_record or "-")
    code = run_stream(args, stage, desc="eval", _stdout=None if per_record else NullSink())
    write_summary(stage.summary(), "stderr" if per_record == "-" else "stdout")
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    try:
        metrics_help = METRICS_HELP.replace("{metrics}", _metric_list())
    except (ImportError, AttributeError):  # help text only; never block the CLI
        metrics_help = METRICS_HELP.replace("{metrics}", "see ppt.metrics")
    group = typer.Typer(cls=_DefaultMetrics, no_args_is_help=True, rich_markup_mode="rich")
    group.command("metrics", help=metrics_help, short_help="Score records with metrics (default command).")(metrics)
    group.command("sweep", help=SWEEP_HELP, short_help="Privacy-utility sweep over mechanisms x eps (CSV + PNG).")(
        sweep
    )
    group.command(
        "pipeline",
        help=PIPELINE_HELP,
        short_help="InferDPT end to end: sanitize -> remote -> extract, with references (CSV + PNG).",
    )(pipeline)
    group.command("mapping", short_help="N_w and retention ratio of a mechanism.")(mapping)
    group.command("mi", short_help="Mutual information between two vector fields (KSG).")(mi)
    group.command("phr", help=PHR_HELP, short_help="Privacy hiding rate of listed private items, with 95% intervals.")(
        phr_cmd
    )
    group.command("make-pii", short_help="Write a PII-inserted BBC prompt set for `ppt eval phr`.")(make_pii_cmd)
    group.command(
        "downstream",
        help=DOWNSTREAM_HELP,
        short_help="Downstream accuracy after sanitization (train/test on sanitized text).",
    )(downstream)
    app.add_typer(
        group,
        name="eval",
        help="Utility/privacy metrics over JSONL (summary JSON on stdout); `sweep`; `mapping`.\n\n"
        "Default command: `ppt eval METRICS` = `ppt eval metrics METRICS`.",
        short_help="Metrics over JSONL: diversity, mauve, coherence, rouge, accuracy, phr, ... ; sweep.",
    )
