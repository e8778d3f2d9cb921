"""`ppt extract`: InferDPT's extraction module on a local causal LM."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from ppt.cli.common import RUN_PANEL, Runtime, SeedOpt
from ppt.cli.kit import STREAM, StreamArgs, custom, stream_command

MODEL_PANEL = "Model and prompt"
GEN_PANEL = "Generation"

HELP = """Turn the remote model's perturbed generation into text aligned with the raw document (InferDPT IV-D).

A local causal LM (default smollm2; any causal LM by path or hub id) gets the paper's extraction prompt
filled with the raw document (--raw-field, kept by `ppt sanitize --keep-original`) and the perturbed
generation (--generation-field, written by `ppt query`), in its chat template when it has one. Records
are generated in left-padded batches of --batch-size (default 8 on a CPU, 256 on CUDA, where the
weights load in bfloat16 unless --dtype says otherwise); --runtime vllm hands generation to vLLM where
it is installed. The result goes to --output-field with a
[bold]ppt.extract[/] stamp (model, device, template hash, parameters, seed, token usage). Runs locally:
the raw document never leaves the machine.

[bold]Examples[/]
  ppt sanitize --mech rantext --eps 6 --keep-original raw < examples/prompts.jsonl \\
    | ppt query --backend local --model smollm2 --max-tokens 60 \\
    | ppt extract --model smollm2 --raw-field raw > final.jsonl
  ppt extract --model smollm2 --raw-field raw --max-new-tokens 60 -i remote.jsonl -o final.jsonl
  ppt extract --template @my_prompt.txt --temperature 0.7 --seed 1 < remote.jsonl
"""

BatchSizeOpt = Annotated[
    int | None,
    typer.Option(
        "--batch-size",
        min=1,
        help="Records processed per batch (default: 8 on a CPU, 256 on CUDA).",
        rich_help_panel=RUN_PANEL,
    ),
]


# the text field of the stream is --raw-field (no --text-field)
@stream_command(omit={"text_field"}, batch_size=custom(BatchSizeOpt, None), require_text=False)
def extract(
    model: Annotated[
        str,
        typer.Option(
            "--model", "-m", help="Local causal LM: alias (smollm2), path or hub id.", rich_help_panel=MODEL_PANEL
        ),
    ] = "smollm2",
    raw_field: Annotated[
        str, typer.Option("--raw-field", help="Field with the raw document (the prefix).", rich_help_panel=MODEL_PANEL)
    ] = "raw",
    generation_field: Annotated[
        str,
        typer.Option(
            "--generation-field",
            help="Field with the perturbed generation from `ppt query`.",
            rich_help_panel=MODEL_PANEL,
        ),
    ] = "generation",
    output_field: Annotated[
        str, typer.Option("--output-field", help="Field that receives the extracted text.", rich_help_panel=MODEL_PANEL)
    ] = "extracted",
    template: Annotated[
        str | None,
        typer.Option(
            "--template",
            help="Prompt with {field} placeholders, or @FILE (default: the paper's extraction prompt).",
            rich_help_panel=MODEL_PANEL,
        ),
    ] = None,
    no_chat: Annotated[
        bool,
        typer.Option(
            "--no-chat",
            help="Feed the prompt as plain text even if the model has a chat template.",
            rich_help_panel=MODEL_PANEL,
        ),
    ] = False,
    max_new_tokens: Annotated[
        int,
        typer.Option(
            "--max-new-tokens", min=1, help="Tokens to generate per record (paper: 100).", rich_help_panel=GEN_PANEL
        ),
    ] = 100,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature",
            min=0.0,
            max=100.0,
            help="0 = greedy (deterministic); > 0 samples.",
            rich_help_panel=GEN_PANEL,
        ),
    ] = 0.0,
    top_p: Annotated[
        float, typer.Option("--top-p", min=0.0, max=1.0, help="Nucleus mass when sampling.", rich_help_panel=GEN_PANEL)
    ] = 1.0,
    stop: Annotated[
        list[str], typer.Option("--stop", help="Stop sequence (repeatable).", rich_help_panel=GEN_PANEL)
    ] = [],
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="auto, float32, float16, bfloat16 (default: bfloat16 on CUDA, the model's own elsewhere).",
            rich_help_panel=GEN_PANEL,
        ),
    ] = None,
    runtime: Annotated[
        Runtime,
        typer.Option(
            "--runtime",
            help="transformers (ppt's batched decode loop) or vllm (when installed; CUDA only).",
            rich_help_panel=GEN_PANEL,
        ),
    ] = "transformers",
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Journal FILE: each extraction is appended as it is made; records already extracted there from "
            "the same prompt and settings are not generated again (their saved records are emitted in place).",
            rich_help_panel=RUN_PANEL,
        ),
    ] = None,
    seed: SeedOpt = None,
    stream: StreamArgs = STREAM,
) -> None:
    from ppt.cli.common import check_resume_target
    from ppt.io import ExitCode, PptError, run_stream, stdout_guard
    from ppt.lm.base import SamplingParams
    from ppt.lm.door import get_lm
    from ppt.lm.templates import EXTRACT_TEMPLATE, load_template
    from ppt.stages.extract import Extractor

    tpl = load_template(
        template, EXTRACT_TEMPLATE, "paper-extraction", {"raw": raw_field, "generation": generation_field}
    )
    try:
        params = SamplingParams(
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p if top_p > 0 else 1e-9,
            stop=tuple(stop),
        )
    except ValueError as e:
        raise PptError(str(e), ExitCode.USAGE) from None
    if resume is not None:
        check_resume_target(resume, stream.output)
    with stdout_guard():
        gen = get_lm(model, runtime=runtime, device=stream.device, dtype=dtype, batch_size=stream.batch_size)
    journal = None
    if resume is not None:
        from ppt.remote.journal import Journal

        journal = Journal(resume, stream.id_field, output_field)
    extractor = Extractor(
        gen,
        raw_field=raw_field,
        generation_field=generation_field,
        output_field=output_field,
        template=tpl,
        params=params,
        seed=seed,
        chat=not no_chat,
        journal=journal,
        id_field=stream.id_field,
    )
    args = dataclasses.replace(stream, text_field=raw_field, batch_size=stream.batch_size or gen.batch_size or 256)
    try:
        code = run_stream(args, extractor, desc="extract")
    finally:
        if journal is not None:
            journal.close()
    if extractor.resumed and not stream.quiet:
        import sys

        print(f"ppt: extract: {extractor.resumed} resumed from the journal", file=sys.stderr)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command(
        "extract",
        help=HELP,
        short_help="InferDPT extraction: align the remote answer with the raw document on a local LM.",
    )(extract)
