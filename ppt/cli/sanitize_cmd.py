"""`ppt sanitize`: perturb the text field of each record with a local-DP mechanism."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import typer

from ppt.cli.common import (
    IO_PANEL,
    RUN_PANEL,
    ActorsOpt,
    EngineOpt,
    RayAddressOpt,
    SeedOpt,
    WorkersOpt,
    auto_workers,
    check_engine,
    parse_params,
)
from ppt.cli.kit import STREAM, StreamArgs, custom, stream_command

MECH_PANEL = "Mechanism"
POLICY_PANEL = "Keep-verbatim policies (defaults per mechanism: see `ppt mechs`)"

HELP = """Perturb the text of each JSONL record with a local-DP mechanism and stamp the privacy accounting.

The text field is replaced by the private text; the raw text is written only with --keep-original FIELD.
Each record gets a [bold]ppt.sanitize[/] block that depends only on public parameters and the number of
perturbed tokens: a short signature (mechanism, eps, space id#hash, key parameters, policy, version; expand
it with `ppt mechs --describe SIGNATURE`), the privacy block (proven per-token and composed eps, or null when
nothing is proven; conditional bounds and papers' claims labelled apart; what the policy lets through) and
"seeded" (never the seed). --stamp full adds the whole parameter block; --diagnostics FIELD writes the
counts that depend on the raw text (kept/dropped by reason, list sizes, eps') to FIELD, which stays local.
A record that cannot be privatized is never emitted with its raw text.

[bold]Examples[/]
  cat examples/prompts.jsonl | ppt sanitize --mech rantext --eps 6 > private.jsonl
  ppt sanitize -m santext+ -e 3 --param w=0.9 --param p=0.3 -i docs.jsonl -o private.jsonl
  ppt sanitize -m custext+ -e 1 --keep-original raw --on-error record < docs.jsonl
  ppt sanitize -m cape -e 6 --model smollm2 < docs.jsonl
  ppt sanitize -m tem --diagnostics diag --stamp full -i docs.jsonl -o local-only.jsonl
  ppt sanitize -m custext+ -e 1 --engine ray --input 'shards/*.jsonl' --output private/   # docs/scale.md
  ppt sanitize -m rantext -e 6 --keep-original raw --emit-alignment ppt_alignment < docs.jsonl \\
    | ppt attack knn --original-field raw
"""


BatchSizeOpt = Annotated[
    int | None,
    typer.Option(
        "--batch-size",
        min=1,
        help="Records processed per batch (default: the mechanism's: 256 for the token mechanisms on the CPU, 4096 on a GPU; 64 for Cape on the CPU, 512 on a GPU; 64 otherwise). The output does not depend on it.",
        rich_help_panel=RUN_PANEL,
    ),
]


TextFieldsOpt = Annotated[
    list[str],
    typer.Option(
        "--text-field",
        help="Field holding the text of each record (a dotted path for nested objects: msg.body). Repeat it to "
        "sanitize several fields in one pass (--text-field title --text-field body): each is perturbed with its "
        "own randomness and the stamp's privacy block composes them all; --keep-original keeps the first.",
        rich_help_panel=IO_PANEL,
    ),
]


@stream_command(batch_size=custom(BatchSizeOpt, None), text_field=custom(TextFieldsOpt, ["text"]))
def sanitize(
    preset: Annotated[
        Literal["readable"] | None,
        typer.Option(
            "--preset",
            help="readable: private and readable prompts: detected spans (e-mails, phones, names, places, dates, "
            "health, religion, ... and --deny) become typed placeholders (<PERSON_1>), the rest is kept; add "
            "--mapping FIELD and `ppt restore` puts the values back into the answer. Explicit flags win.",
            rich_help_panel=MECH_PANEL,
        ),
    ] = None,
    mech: Annotated[
        str | None,
        typer.Option(
            "--mech",
            "-m",
            help="Mechanism (see `ppt mechs`; default: rantext, placeholder under --preset readable).",
            rich_help_panel=MECH_PANEL,
        ),
    ] = None,
    eps: Annotated[
        float | None,
        typer.Option(
            "--eps", "-e", help="Privacy parameter per token (default: the mechanism's).", rich_help_panel=MECH_PANEL
        ),
    ] = None,
    space: Annotated[
        str | None,
        typer.Option("--space", help="Embedding space (default: the mechanism's).", rich_help_panel=MECH_PANEL),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Context model for Cape (alias, path or hub id).", rich_help_panel=MECH_PANEL),
    ] = None,
    param: Annotated[
        list[str],
        typer.Option(
            "--param", "-p", help="Mechanism parameter KEY=VALUE (repeatable), e.g. w=0.9.", rich_help_panel=MECH_PANEL
        ),
    ] = [],
    oov: Annotated[
        Literal["drop", "uniform", "keep"] | None,
        typer.Option(
            "--oov", help="Out-of-vocabulary tokens: drop | uniform | keep (leaks).", rich_help_panel=POLICY_PANEL
        ),
    ] = None,
    numbers: Annotated[
        Literal["random-digits", "perturb", "drop", "keep"] | None,
        typer.Option(
            "--numbers", help="Numbers: random-digits | perturb | drop | keep (leaks).", rich_help_panel=POLICY_PANEL
        ),
    ] = None,
    punct: Annotated[
        Literal["keep", "drop"] | None,
        typer.Option("--punct", help="Punctuation: keep | drop.", rich_help_panel=POLICY_PANEL),
    ] = None,
    stopwords: Annotated[
        Literal["perturb", "keep"] | None,
        typer.Option("--stopwords", help="NLTK stopwords: perturb | keep.", rich_help_panel=POLICY_PANEL),
    ] = None,
    case: Annotated[
        Literal["sentence", "vocab", "original"] | None,
        typer.Option(
            "--case",
            help="Capitalisation of replacements: sentence | vocab | original (leaks case).",
            rich_help_panel=POLICY_PANEL,
        ),
    ] = None,
    protect: Annotated[
        Literal["all", "detected"] | None,
        typer.Option(
            "--protect",
            help="all: perturb the whole text (default). detected: replace only the spans a detector marks "
            "(--detect, --deny) and keep the rest verbatim: readable, but what the detector misses is released "
            "raw (the stamp says so).",
            rich_help_panel=POLICY_PANEL,
        ),
    ] = None,
    detect: Annotated[
        str | None,
        typer.Option(
            "--detect",
            help="Detectors for --protect detected, comma-separated: patterns (presidio-analyzer: e-mails, "
            "phones, cards, IBANs, IDs, licences, usernames, dates, ages), addresses (postal addresses of many "
            "countries, one span each), ner (spaCy on en_core_web_md: people, organisations, places, dates), "
            "names (a gazetteer of names of 86 locales, honorifics, 'my wife ...'), categories (health, sexual "
            "orientation, religion, political opinion, ethnicity, finances, immigration, criminal record). "
            "patterns and ner need: pip install 'ppt-private-prompts\\[readable]' && ppt models install. "
            "Default: patterns,addresses,ner,names,categories, or none when --deny is given.",
            rich_help_panel=POLICY_PANEL,
        ),
    ] = None,
    deny: Annotated[
        str | None,
        typer.Option(
            "--deny",
            metavar="FILE",
            help="With --protect detected: words and phrases (one a line) that are always replaced.",
            rich_help_panel=POLICY_PANEL,
        ),
    ] = None,
    mapping: Annotated[
        str | None,
        typer.Option(
            "--mapping",
            metavar="FIELD",
            help="With --protect detected: also write each replaced span's surrogate and original text to FIELD "
            "(stays local! ppt query refuses it), for `ppt restore` to put the real values back into an answer.",
            rich_help_panel=POLICY_PANEL,
        ),
    ] = None,
    allow: Annotated[
        str | None,
        typer.Option(
            "--allow",
            metavar="FILE",
            help="With --protect detected: detected spans whose text is on this list (one a line) are kept.",
            rich_help_panel=POLICY_PANEL,
        ),
    ] = None,
    keep_kinds: Annotated[
        str | None,
        typer.Option(
            "--keep-kinds",
            metavar="KINDS",
            help="With --protect detected: detected kinds kept verbatim, comma-separated (e.g. ORG to keep "
            "organisations, NORP nationalities); stated in the stamp's signature.",
            rich_help_panel=POLICY_PANEL,
        ),
    ] = None,
    keep_original: Annotated[
        str | None,
        typer.Option(
            "--keep-original", help="Also write the raw text to this field (stays local!).", rich_help_panel=MECH_PANEL
        ),
    ] = None,
    min_kept: Annotated[
        int,
        typer.Option(
            "--min-kept",
            min=0,
            help="A record whose private text keeps fewer than N tokens (e.g. all dropped as out-of-vocabulary) is an error handled by --on-error; 0 (default) keeps it, with a warning when it is empty.",
            rich_help_panel=POLICY_PANEL,
        ),
    ] = 0,
    diagnostics: Annotated[
        str | None,
        typer.Option(
            "--diagnostics",
            help="Also write this record's per-record accounting (kept/dropped counts by reason, list sizes, Cape's eps') and its exact privacy block to this field: they depend on the raw text (stays local!).",
            rich_help_panel=MECH_PANEL,
        ),
    ] = None,
    stamp_mode: Annotated[
        Literal["compact", "full"],
        typer.Option(
            "--stamp",
            help="compact: a signature (expand it with `ppt mechs --describe`) and the privacy block; full: also the mechanism's whole parameter block.",
            rich_help_panel=MECH_PANEL,
        ),
    ] = "compact",
    emit_alignment: Annotated[
        str | None,
        typer.Option(
            "--emit-alignment",
            help="Also write \\[\\[orig_row, new_row, start, end], ...] per perturbed token to this field, for `ppt attack` / `ppt eval` (reveals the original tokens: stays local!).",
            rich_help_panel=MECH_PANEL,
        ),
    ] = None,
    stream: StreamArgs = STREAM,
    report_sample: Annotated[
        int,
        typer.Option(
            "--report-sample",
            min=0,
            metavar="N",
            help="With --report and --keep-original FIELD: also put the raw and the sanitized text of the first N "
            "records in the report (replaced tokens highlighted from --emit-alignment when given), for "
            "`ppt report` to show side by side. The report is then local only (written 0600). Default 0: "
            "no text in the report.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = 0,
    seed: SeedOpt = None,
    engine: EngineOpt = "local",
    ray_address: RayAddressOpt = None,
    actors: ActorsOpt = None,
    workers: WorkersOpt = None,
) -> None:
    from ppt.io import ExitCode, PptError, stdout_guard
    from ppt.rng import warn_if_seeded
    from ppt.stages.sanitize import SanitizeStage
    from ppt.stages.sanitize_spec import with_preset

    collector = _check_report(report_sample, keep_original, engine)
    mech, protect = with_preset(preset, mech=mech, protect=protect)
    params = parse_params(param)
    policy = {"oov": oov, "numbers": numbers, "punct": punct, "stopwords": stopwords, "case": case}
    check_engine(engine, ray_address, actors)
    if engine == "ray" and workers is not None:
        raise PptError("--workers is for --engine local (Ray runs --actors)", exit_code=ExitCode.USAGE)
    from ppt.exec.pool import run_stage_in_workers
    from ppt.exec.recipes import SanitizeRecipe

    # the one spec of this run: validated here, carried to the stage, the stamper, workers and Ray
    spec = SanitizeRecipe(
        mech,
        eps,
        space=space,
        model=model,
        params=params,
        policy=policy,
        device=stream.device,
        text_field=stream.text_field,
        extra_text_fields=stream.text_fields[1:],
        seed=seed,
        keep_original=keep_original,
        emit_alignment=emit_alignment,
        min_kept=min_kept,
        diagnostics=diagnostics,
        stamp_mode=stamp_mode,
        protect=protect,
        detect=tuple(d.strip() for d in (detect or "").split(",") if d.strip()),
        deny=deny,
        allow=allow,
        keep_kinds=tuple(k.strip() for k in (keep_kinds or "").split(",") if k.strip()),
        mapping=mapping,
    )
    if engine == "ray":
        from ppt.exec.ray import RayOptions, run_stage_on_ray

        warn_if_seeded(seed)
        raise typer.Exit(
            run_stage_on_ray(
                dataclasses.replace(stream, batch_size=stream.batch_size or 64),
                spec,
                options=RayOptions(address=ray_address, actors=actors),
                desc="sanitize",
                build_hint=spec.build_hint(),
            )
        )
    with stdout_guard():
        mechanism = spec.build_mechanism(quiet=stream.quiet)
    warn_if_seeded(seed)
    if collector is not None and report_sample:
        collector.keep_sample(report_sample, locate=_locator(mechanism))
    args = dataclasses.replace(stream, batch_size=stream.batch_size or mechanism.default_batch_size())
    stage = SanitizeStage(mechanism, spec)
    if workers is None:  # --workers left out: 1 unless the input is large and cores are idle (ppt.cli.common)
        from ppt.exec.pool import default_workers

        workers = auto_workers(stream.input, default_workers(stage))
    # workers (--workers) build their stage from the same spec; one batch runs here, no worker started
    raise typer.Exit(
        run_stage_in_workers(args, spec, workers=workers, stage=stage, desc="sanitize", build_hint=spec.build_hint())
    )


def _check_report(report_sample: int, keep_original: str | None, engine: str):
    """The run's --report collector (None without --report), after checking --report-sample's needs."""
    from ppt.io import ExitCode, PptError
    from ppt.io.run_report import active

    collector = active()
    if collector is not None and engine == "ray":
        raise PptError("--report is for --engine local", ExitCode.USAGE, hint="the Ray driver prints its counts")
    if report_sample and collector is None:
        raise PptError("--report-sample needs --report FILE", ExitCode.USAGE, hint="add --report run.json")
    if report_sample and not keep_original:
        raise PptError(
            "--report-sample needs --keep-original FIELD (the sample shows the raw text beside the private one)",
            ExitCode.USAGE,
            hint="add --keep-original raw (and --emit-alignment al to highlight the replaced tokens)",
        )
    return collector


def _locator(mechanism):
    """Where a mechanism's original tokens stand in a raw text (its space's tokens), for the report's
    sample; None for a mechanism without a space (Cape)."""
    space = getattr(mechanism, "space", None)
    if space is None or not callable(getattr(space, "tokenize", None)):
        return None
    import numpy as np

    from ppt.mechanisms.alignment import spans_by_rows

    return lambda text, rows: spans_by_rows(space, text, np.asarray(rows, dtype=np.int64))


def register(app: typer.Typer) -> None:
    app.command(
        "sanitize",
        help=HELP,
        short_help="Perturb prompts token by token with local DP (RANTEXT, Cape, SanText, CusText, TEM).",
    )(sanitize)
