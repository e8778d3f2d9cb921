"""`ppt dp-opt tune|eval|apply`: differentially private prompt tuning (DP-OPT) with corrected accounting."""

from __future__ import annotations

import math
import sys
from typing import Annotated, Literal

import typer

from ppt.cli.common import SeedOpt
from ppt.cli.kit import STREAM, StreamArgs, stream_command

PANEL = "DP-OPT"

# the choices of ppt.dpopt.accountant.METHODS (tests/cli/test_choices.py keeps them equal)
Accountant = Literal["pld", "rdp"]
# the names of ppt.dpopt.tune.PRESETS (tests/dpopt/test_presets.py keeps them equal)
Preset = Literal["paper"]
# the options a preset sets; an explicit flag wins over the preset's value
PRESET_OPTIONS = (
    "ensemble",
    "shots",
    "rate",
    "eps0",
    "delta0",
    "k_bar",
    "temperature",
    "max_prompts",
    "max_tokens",
    "retries",
    "val_fraction",
)

LabelFieldOpt = Annotated[
    str, typer.Option("--label-field", help="Field holding each record's label.", rich_help_panel=PANEL)
]


# --on-error fail and the default batch: a tuning run needs every record
@stream_command(omit={"on_error", "batch_size", "report", "output_format"})  # -o: one JSON object
def tune(
    ctx: typer.Context,
    labels: Annotated[
        str,
        typer.Option("--labels", help="Comma-separated label words, e.g. 'negative,positive'.", rich_help_panel=PANEL),
    ],
    stream: StreamArgs = STREAM,
    preset: Annotated[
        Preset | None,
        typer.Option(
            "--preset",
            help="A named bundle of settings: 'paper' = the DP-OPT paper's (205 subsets x 5 demonstrations, eps0 1.8, "
            "delta0 5e-7, k-bar 10, temperature 1.1, 40 prompts x 50 tokens, stop at the first bottom, rate 0.15, "
            "val-fraction 0.05). Options given on the command line win over it (it replaces defaults, ppt.toml's "
            "included).",
            rich_help_panel=PANEL,
        ),
    ] = None,
    eps: Annotated[
        float,
        typer.Option(
            "--eps", help="Privacy budget eps (inf: the non-private run, same code path).", rich_help_panel=PANEL
        ),
    ] = 8.0,
    delta: Annotated[
        float | None,
        typer.Option(
            "--delta",
            help="Privacy budget delta (default: 1e-5, whatever the number of records: a delta derived from n would release n; pass one below 1/n for large data).",
            rich_help_panel=PANEL,
        ),
    ] = None,
    model: Annotated[
        str, typer.Option("--model", help="Local causal LM (alias, path or hub id).", rich_help_panel=PANEL)
    ] = "smollm2",
    init: Annotated[
        str, typer.Option("--init", help="Initial instruction (public).", rich_help_panel=PANEL)
    ] = "Classify the sentiment.",
    ensemble: Annotated[
        int,
        typer.Option(
            "--ensemble", min=1, help="Disjoint subsets (meta-prompts) voting per token.", rich_help_panel=PANEL
        ),
    ] = 400,
    shots: Annotated[
        int, typer.Option("--shots", min=1, help="Records per subset's meta-prompt.", rich_help_panel=PANEL)
    ] = 2,
    rate: Annotated[
        float,
        typer.Option("--rate", help="Probability that a subset votes on a query (Poisson).", rich_help_panel=PANEL),
    ] = 0.25,
    eps0: Annotated[
        float,
        typer.Option("--eps0", help="eps of one LimitedDomain release (before amplification).", rich_help_panel=PANEL),
    ] = 0.75,
    delta0: Annotated[
        float | None,
        typer.Option(
            "--delta0",
            help="delta of one LimitedDomain release (default: sized so that the queries the budget covers use "
            "at most half of --delta).",
            rich_help_panel=PANEL,
        ),
    ] = None,
    k_bar: Annotated[
        int, typer.Option("--k-bar", min=1, help="LimitedDomain's domain size.", rich_help_panel=PANEL)
    ] = 10,
    max_prompts: Annotated[
        int, typer.Option("--max-prompts", min=1, help="Candidate instructions generated.", rich_help_panel=PANEL)
    ] = 4,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=1, help="Tokens per candidate at most.", rich_help_panel=PANEL)
    ] = 24,
    retries: Annotated[
        int,
        typer.Option(
            "--retries",
            min=0,
            help="Bottoms retried per token with fresh votes (0: a candidate ends at its first bottom).",
            rich_help_panel=PANEL,
        ),
    ] = 0,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature",
            min=0.0,
            help="Sampling temperature of each vote (the paper's 1.1 spreads small models' votes too thin for "
            "LimitedDomain to release a token; the guarantee does not depend on it).",
            rich_help_panel=PANEL,
        ),
    ] = 0.5,
    val_fraction: Annotated[
        float,
        typer.Option("--val-fraction", help="Share of records held out for private selection.", rich_help_panel=PANEL),
    ] = 0.1,
    accountant: Annotated[
        Accountant, typer.Option("--accountant", help="pld (tight) or rdp.", rich_help_panel=PANEL)
    ] = "pld",
    checkpoint: Annotated[
        str | None,
        typer.Option(
            "--checkpoint",
            help="Directory to save progress to and resume from (holds the subset key: keep it private).",
            rich_help_panel=PANEL,
        ),
    ] = None,
    label_field: LabelFieldOpt = "label",
    seed: SeedOpt = None,
) -> None:
    """Tune an instruction privately: ensemble generation with LimitedDomain, then private selection.

    Writes one JSON object: the chosen instruction, the candidates, and a `dp-opt` stamp with the full
    accounting. Fails before loading any model on bad labels, too few records or a budget below one token,
    and says how many LimitedDomain queries the budget covers before the model loads. The defaults are sized
    for >= 1,000 records at eps 8 (400 subsets x 2 demonstrations, rate 0.25, eps0 0.75: ~47 queries).

    Example: ppt dp-opt tune -i train.jsonl --labels 'negative,positive' --eps 8 --model smollm2 -o prompt.json
    """
    from ppt.dpopt.tune import TuneConfig
    from ppt.progress import progress_bar
    from ppt.rng import warn_if_seeded
    from ppt.stages.dpopt import parse_labels, run_tune

    warn_if_seeded(seed)
    own = {
        "ensemble": ensemble,
        "shots": shots,
        "rate": rate,
        "eps0": eps0,
        "delta0": delta0,
        "k_bar": k_bar,
        "temperature": temperature,
        "max_prompts": max_prompts,
        "max_tokens": max_tokens,
        "retries": retries,
        "val_fraction": val_fraction,
    }
    common = {"eps": eps, "delta": delta, "init": init, "accountant": accountant, "seed": seed}
    if preset is None:
        cfg = TuneConfig(labels=parse_labels(labels), **common, **own)
    else:
        given = {k: v for k, v in own.items() if _on_command_line(ctx, k)}
        cfg = TuneConfig.preset(preset, parse_labels(labels), **common, **given)
    quiet = stream.quiet
    bar = None
    first = 0

    def fmt(x: float) -> str:
        return "inf" if math.isinf(x) else f"{x:.3g}"

    def progress(ev: dict) -> None:
        nonlocal bar, first
        kind = ev["event"]
        if kind == "plan":
            if not quiet:
                print(
                    f"ppt: dp-opt: eps {fmt(ev['eps'])} delta {ev['delta']:g} covers {ev['budget_queries']} "
                    f"LimitedDomain queries (eps0 {fmt(ev['eps0'])}, delta0 {ev['delta0']:.2g}, rate {ev['rate']:g}; "
                    f"{ev['ensemble']} subsets x {ev['shots']} demonstrations; at most {ev['max_prompts']} "
                    f"candidates x {ev['max_tokens']} tokens = {ev['max_queries']} queries)"
                    + (f"; {ev['queries_spent']} already spent (checkpoint)" if ev["queries_spent"] else ""),
                    file=sys.stderr,
                    flush=True,
                )
            return
        if kind == "start":
            first = ev["queries"]
            bar = progress_bar(max(ev["budget"] - first, 0), "ppt: dp-opt", quiet=quiet, unit="query")
        if bar is None:
            return
        bar.update(ev["queries"] - first - bar.n)
        bar.set_postfix_str(
            f"candidate {ev['candidate'] + 1}, {ev['released']} token(s) released, "
            f"{ev['queries']}/{ev['budget']} queries, eps {fmt(ev['eps_spent'])}",
            refresh=False,
        )
        if kind == "candidate" and bar.disable and not quiet:  # no bar (not a terminal): a line per candidate
            print(
                f"ppt: dp-opt: candidate {ev['candidate'] + 1}: {ev['tokens']} token(s) (stop: {ev['stop']}); "
                f"{ev['queries']}/{ev['budget']} queries ({ev['failures']} failed), eps spent {fmt(ev['eps_spent'])}",
                file=sys.stderr,
                flush=True,
            )

    try:
        res = run_tune(stream, label_field, cfg, model, checkpoint, progress)
    finally:
        if bar is not None:
            bar.close()
    if not quiet:
        b = res["ppt"]["dp-opt"]
        g = b["generation"]
        spent = b.get("realised_eps")
        spent = f"{spent:.4g}" if isinstance(spent, float) else spent
        print(
            f"ppt: dp-opt: {len(res['candidates'])} candidate(s); eps {b['eps']} delta {b['delta']:g} "
            f"(realised before the stop: {spent}; {g['queries']} of {g['budget_queries']} "
            f"queries, stopped: {g['stopped']})",
            file=sys.stderr,
        )


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` was given on the command line (or its environment variable), not left at its
    default, built-in or from ppt.toml: a preset replaces defaults, never what was typed."""
    src = ctx.get_parameter_source(name)
    return src is not None and src.name in ("COMMANDLINE", "ENVIRONMENT", "PROMPT")


# --on-error fail: the accuracy is over every record
@stream_command(omit={"on_error", "report"}, batch_size=16)
def eval_(
    prompt: Annotated[
        str, typer.Option("--prompt", help="The JSON object written by `ppt dp-opt tune`.", rich_help_panel=PANEL)
    ],
    stream: StreamArgs = STREAM,
    model: Annotated[
        str | None, typer.Option("--model", help="Local causal LM that scores the labels.", rich_help_panel=PANEL)
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="OpenAI-compatible endpoint returning prompt logprobs (/completions, echo).",
            rich_help_panel=PANEL,
        ),
    ] = None,
    remote_model: Annotated[
        str | None, typer.Option("--remote-model", help="Model name sent to the endpoint.", rich_help_panel=PANEL)
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env", help="Environment variable holding the endpoint's API key.", rich_help_panel=PANEL
        ),
    ] = None,
    initial: Annotated[
        bool,
        typer.Option(
            "--initial", help="Evaluate the prompt file's initial instruction instead.", rich_help_panel=PANEL
        ),
    ] = False,
    label_field: LabelFieldOpt = "label",
) -> None:
    """Zero-shot accuracy of a tuned instruction by label-word log-probability, with a 95% interval.

    Example: ppt dp-opt eval --prompt prompt.json -i test.jsonl --model smollm2
    """
    from ppt.stages.dpopt import load_prompt, run_eval

    inst = load_prompt(prompt).get("init") if initial else None
    res = run_eval(
        prompt,
        stream,
        label_field,
        model,
        base_url,
        instruction=inst,
        remote_model=remote_model,
        api_key_env=api_key_env,
    )
    if not stream.quiet:
        lo, hi = res["ci95"]
        print(f"ppt: dp-opt: accuracy {res['accuracy']:.3f} (95% CI {lo:.3f}-{hi:.3f}, n={res['n']})", file=sys.stderr)


# the output holds each record's text: created 0600
@stream_command(omit={"device"}, private=True)
def apply(
    prompt: Annotated[
        str, typer.Option("--prompt", help="The JSON object written by `ppt dp-opt tune`.", rich_help_panel=PANEL)
    ],
    stream: StreamArgs = STREAM,
) -> None:
    """Wrap each record's text in the tuned instruction's forward template (input for `ppt query`).

    The prompt's eps covers its tuning data only: the new text is released as it comes in, so sanitize it first
    (`ppt query` refuses unsanitized records; --allow-raw sends the raw text on purpose).

    Example: ppt sanitize -i new.jsonl | ppt dp-opt apply --prompt prompt.json | ppt query --model gpt-4o-mini --template '{text}'
    """
    from ppt.io import run_stream
    from ppt.stages.dpopt import ApplyStage, load_prompt

    stage = ApplyStage(load_prompt(prompt), stream.text_field)
    raise typer.Exit(run_stream(stream, stage, desc="dp-opt apply"))


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Differentially private prompt tuning (DP-OPT): tune an instruction on private labelled data with a "
        "local LM; only the instruction goes to a cloud model.\n\n"
        "Example: ppt dp-opt tune -i train.jsonl --labels 'negative,positive' --eps 8 --model smollm2 -o prompt.json",
        no_args_is_help=True,
        rich_markup_mode="rich",
    )
    group.command("tune")(tune)
    group.command("eval")(eval_)
    group.command("apply")(apply)
    app.add_typer(
        group,
        name="dp-opt",
        help="Private prompt tuning (DP-OPT): tune, eval, apply.  Example: ppt dp-opt tune --help",
    )
