"""`ppt attack knn|mti|llm|ngram`: measure what an adversary recovers from sanitized text."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import (
    BatchSizeOpt,
    DeviceOpt,
    IdFieldOpt,
    InputOpt,
    OnErrorOpt,
    OutputOpt,
    QuietOpt,
    TextFieldOpt,
    handle_errors,
    stream_args,
)

ATTACK_PANEL = "Attack"
RAW_NOTE = (
    "Attacks are evaluation tools: they read the raw text from --original-field (e.g. what "
    "`ppt sanitize --keep-original FIELD` wrote). Keep such files local; never send them to the remote party."
)

OriginalOpt = Annotated[
    str | None,
    typer.Option(
        "--original-field", help="Field with the raw (original) text; read by the attack.", rich_help_panel=ATTACK_PANEL
    ),
]
SummaryOpt = Annotated[
    str,
    typer.Option(
        "--summary",
        help="Where the summary record goes: stderr, stdout (appended as the last JSONL line), a file path, or none.",
        rich_help_panel=ATTACK_PANEL,
    ),
]
SummaryOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--summary-only",
        help="Write only the summary record, on stdout (no per-record output).",
        rich_help_panel=ATTACK_PANEL,
    ),
]
ResultFieldOpt = Annotated[
    str,
    typer.Option(
        "--result-field",
        help="Object field that collects per-record results under the attack's name.",
        rich_help_panel=ATTACK_PANEL,
    ),
]
SpaceOpt = Annotated[
    str | None,
    typer.Option(
        "--space",
        help="Embedding space to attack in (default: the one in each record's ppt.sanitize stamp).",
        rich_help_panel=ATTACK_PANEL,
    ),
]
AlignFieldOpt = Annotated[
    str,
    typer.Option(
        "--alignment-field",
        help="Per-record \\[\\[orig_row, new_row, start, end], ...] from the sanitizer, used when present.",
        rich_help_panel=ATTACK_PANEL,
    ),
]
StopwordsOpt = Annotated[
    str,
    typer.Option(
        "--stopwords",
        help="Text alignment only: score stopwords (include), leave them out (exclude), or exclude when the stamp says the mechanism kept them (auto).",
        rich_help_panel=ATTACK_PANEL,
    ),
]

attack_app = typer.Typer(
    help="Measure what an adversary recovers from sanitized text; privacy = 1 - success rate.\n\n" + RAW_NOTE,
    no_args_is_help=True,
    rich_markup_mode="rich",
)


class _Discard:
    def write(self, data) -> None:
        pass

    def flush(self) -> None:
        pass


def emit_summary(obj: dict, target: str) -> None:
    """Write a summary object to stderr, stdout, a file (through the -o sink), or nowhere."""
    import sys

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


def _check_summary(target: str) -> None:
    import os

    from ppt.io import ExitCode, PptError

    if target in ("stderr", "stdout", "-", "none"):
        return
    d = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(d):
        raise PptError(f"summary directory does not exist: {d}", ExitCode.IOERR, hint="create it first")


def _run(runner, args, desc: str, summary: str, summary_only: bool) -> int:
    from ppt.io import run_stream
    from ppt.stages.attack import summary_record

    code = run_stream(args, runner, desc=desc, _stdout=_Discard() if summary_only else None)
    emit_summary(summary_record(runner), "stdout" if summary_only else summary)
    return code


def _aligner(space, original_field, alignment_field, stopwords, device, quiet):
    from ppt.io import stdout_guard
    from ppt.stages.attack import SpaceCache, TokenAligner

    aligner = TokenAligner(SpaceCache(device=device, quiet=quiet), space, original_field, alignment_field, stopwords)
    with stdout_guard():
        aligner.prepare()  # a bad --space fails before input is opened
    return aligner


@attack_app.command("knn")
def knn(
    k: Annotated[
        list[int],
        typer.Option("--k", "-k", min=1, help="K of the top-K success (repeatable).", rich_help_panel=ATTACK_PANEL),
    ] = [1, 10],  # noqa: B006 - typer reads the default
    space: SpaceOpt = None,
    original_field: OriginalOpt = None,
    alignment_field: AlignFieldOpt = "ppt_alignment",
    stopwords: StopwordsOpt = "auto",
    summary: SummaryOpt = "stderr",
    summary_only: SummaryOnlyOpt = False,
    result_field: ResultFieldOpt = "attack",
    input: InputOpt = "-",
    output: OutputOpt = "-",
    text_field: TextFieldOpt = "text",
    id_field: IdFieldOpt = "id",
    on_error: OnErrorOpt = "fail",
    batch_size: BatchSizeOpt = 64,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    """Embedding inversion: is the original among the K vocabulary embeddings nearest to each perturbed token?

    Tokens are paired through the --alignment-field when records carry one, else by aligning
    --original-field and the text in the space (see `ppt.attacks.realign`). Success rates are pooled
    over tokens; privacy = 1 - rate with a 95% Wilson interval.

    [bold]Examples[/]
      ppt sanitize -m rantext -e 6 --keep-original raw < docs.jsonl | ppt attack knn --original-field raw
      ppt attack knn --original-field raw --space glove-6b-50d -k 1 -k 5 --summary-only < private.jsonl
    """
    with handle_errors():
        from ppt.stages.attack import KnnRunner

        _check_summary(summary)
        aligner = _aligner(space, original_field, alignment_field, stopwords, device, quiet)
        runner = KnnRunner(aligner, tuple(k), result_field)
        args = stream_args(
            input=input,
            output=output,
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            batch_size=batch_size,
            quiet=quiet,
            device=device,
        )
        raise typer.Exit(_run(runner, args, "attack knn", summary, summary_only))


@attack_app.command("mti")
def mti(
    model: Annotated[
        str,
        typer.Option(
            "--model", help="Masked LM: splade-tiny (offline), a local path or a hub id.", rich_help_panel=ATTACK_PANEL
        ),
    ] = "splade-tiny",
    mask_length: Annotated[
        str,
        typer.Option(
            "--mask-length",
            help="original: as many masks as the original word needs (attacker knows its length); one: a single mask.",
            rich_help_panel=ATTACK_PANEL,
        ),
    ] = "original",
    max_copies: Annotated[
        int,
        typer.Option(
            "--max-copies",
            min=1,
            help="Masked copies per forward pass (all copies of a record in one pass up to this).",
            rich_help_panel=ATTACK_PANEL,
        ),
    ] = 256,
    space: SpaceOpt = None,
    original_field: OriginalOpt = None,
    alignment_field: AlignFieldOpt = "ppt_alignment",
    stopwords: StopwordsOpt = "auto",
    summary: SummaryOpt = "stderr",
    summary_only: SummaryOnlyOpt = False,
    result_field: ResultFieldOpt = "attack",
    input: InputOpt = "-",
    output: OutputOpt = "-",
    text_field: TextFieldOpt = "text",
    id_field: IdFieldOpt = "id",
    on_error: OnErrorOpt = "fail",
    batch_size: BatchSizeOpt = 64,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    """Mask token inference: mask each perturbed token and let a masked LM predict the original.

    The masked span is the perturbed token's character span, mapped onto the masked LM's own tokens by
    offsets, so tokenizers never get compared position by position. Success: the prediction equals
    the original word (case-insensitive).

    [bold]Examples[/]
      ppt attack mti --original-field raw < private.jsonl
      ppt attack mti --model ./bert-base-uncased --mask-length one --original-field raw --summary-only < private.jsonl
    """
    with handle_errors():
        from ppt.attacks.mti import MASK_LENGTHS, MtiAttack
        from ppt.io import ExitCode, PptError, stdout_guard
        from ppt.models import load_masked_lm
        from ppt.stages.attack import MtiRunner

        if mask_length not in MASK_LENGTHS:
            raise PptError(f"--mask-length must be one of {', '.join(MASK_LENGTHS)}", ExitCode.USAGE)
        _check_summary(summary)
        aligner = _aligner(space, original_field, alignment_field, stopwords, device, quiet)
        with stdout_guard():
            m, tok = load_masked_lm(model, device=device)
        try:
            attack = MtiAttack(m, tok, mask_length=mask_length, max_copies=max_copies)
        except ValueError as e:
            raise PptError(f"{model}: {e}", ExitCode.CONFIG) from None
        runner = MtiRunner(aligner, attack, model, result_field)
        args = stream_args(
            input=input,
            output=output,
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            batch_size=batch_size,
            quiet=quiet,
            device=device,
        )
        raise typer.Exit(_run(runner, args, "attack mti", summary, summary_only))


@attack_app.command("llm")
def llm(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="Local causal LM (alias, path, hub id), or the endpoint's model name with --base-url.",
            rich_help_panel=ATTACK_PANEL,
        ),
    ] = "smollm2",
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="OpenAI-compatible endpoint (via ppt.remote) instead of a local model.",
            rich_help_panel=ATTACK_PANEL,
        ),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env", help="Environment variable holding the endpoint's API key.", rich_help_panel=ATTACK_PANEL
        ),
    ] = None,
    prompt_file: Annotated[
        str | None,
        typer.Option(
            "--prompt-file",
            help="Prompt template file with {perturbed} (default: a built-in restoration prompt).",
            rich_help_panel=ATTACK_PANEL,
        ),
    ] = None,
    max_new_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-new-tokens",
            min=1,
            help="Generation budget (default: 2 tokens per word of the perturbed text + 16).",
            rich_help_panel=ATTACK_PANEL,
        ),
    ] = None,
    original_field: OriginalOpt = None,
    summary: SummaryOpt = "stderr",
    summary_only: SummaryOnlyOpt = False,
    result_field: ResultFieldOpt = "attack",
    input: InputOpt = "-",
    output: OutputOpt = "-",
    text_field: TextFieldOpt = "text",
    id_field: IdFieldOpt = "id",
    on_error: OnErrorOpt = "fail",
    batch_size: BatchSizeOpt = 8,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    """LLM inference: a generative model is asked to restore the original text from the perturbed one.

    Scores: token recovery rate (original words the perturbed text hid that the restoration brings
    back; the success rate) and Rouge-L F1 against the original (next to the perturbed text's own).
    The restoration is written to the result field.

    [bold]Examples[/]
      ppt attack llm --original-field raw < private.jsonl > restored.jsonl
      ppt attack llm --base-url http://localhost:8000/v1 --model qwen2 --original-field raw --summary-only < private.jsonl
    """
    with handle_errors():
        from pathlib import Path

        from ppt.attacks.llm import PROMPT, LlmAttack
        from ppt.io import ExitCode, PptError, stdout_guard
        from ppt.lm.door import get_lm
        from ppt.stages.attack import LlmRunner

        if not original_field:
            raise PptError("ppt attack llm needs --original-field (the raw text to score against)", ExitCode.USAGE)
        _check_summary(summary)
        prompt = PROMPT
        if prompt_file:
            try:
                prompt = Path(prompt_file).read_text()
            except OSError as e:
                raise PptError(f"cannot read --prompt-file {prompt_file}: {e.strerror}", ExitCode.NOINPUT) from None
        with stdout_guard():
            if base_url:
                try:
                    from ppt.remote.endpoint import EndpointLM

                    backend = EndpointLM(base_url, model, api_key_env=api_key_env)
                except ImportError as e:
                    raise PptError(
                        f"the endpoint client is not available ({e})",
                        ExitCode.CONFIG,
                        hint="install the remote extra: pip install 'ppt[remote]'",
                    ) from None
            else:
                backend = get_lm(model, device=device, batch_size=batch_size)
        try:
            attack = LlmAttack(backend, prompt=prompt, max_new_tokens=max_new_tokens)
        except ValueError as e:
            raise PptError(str(e), ExitCode.USAGE) from None
        runner = LlmRunner(attack, original_field, result_field)
        args = stream_args(
            input=input,
            output=output,
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            batch_size=batch_size,
            quiet=quiet,
            device=device,
        )
        raise typer.Exit(_run(runner, args, "attack llm", summary, summary_only))


@attack_app.command("ngram")
def ngram(
    n: Annotated[
        list[int], typer.Option("--n", "-n", min=1, help="n-gram orders (repeatable).", rich_help_panel=ATTACK_PANEL)
    ] = [1, 2, 3],  # noqa: B006 - typer reads the default
    original_field: OriginalOpt = None,
    summary: SummaryOpt = "stderr",
    summary_only: SummaryOnlyOpt = False,
    result_field: ResultFieldOpt = "attack",
    input: InputOpt = "-",
    output: OutputOpt = "-",
    text_field: TextFieldOpt = "text",
    id_field: IdFieldOpt = "id",
    on_error: OnErrorOpt = "fail",
    batch_size: BatchSizeOpt = 64,
    quiet: QuietOpt = False,
) -> None:
    """N-gram leakage (InferDPT Table VI): share of the raw document's distinct word n-grams found in the
    text field (the remote model's output, or the perturbed prompt itself).

    [bold]Examples[/]
      ppt attack ngram --original-field raw < remote.jsonl
      ppt attack ngram --original-field raw --text-field completion -n 1 -n 2 --summary-only < remote.jsonl
    """
    with handle_errors():
        from ppt.io import ExitCode, PptError
        from ppt.stages.attack import NgramRunner

        if not original_field:
            raise PptError("ppt attack ngram needs --original-field (the raw document)", ExitCode.USAGE)
        _check_summary(summary)
        runner = NgramRunner(original_field, tuple(n), result_field)
        args = stream_args(
            input=input,
            output=output,
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            batch_size=batch_size,
            quiet=quiet,
        )
        raise typer.Exit(_run(runner, args, "attack ngram", summary, summary_only))


def register(app: typer.Typer) -> None:
    app.add_typer(
        attack_app,
        name="attack",
        help="Measure what an adversary recovers: knn, mti, llm, ngram; privacy = 1 - success rate.\n\n" + RAW_NOTE,
        short_help="Privacy attacks on sanitized text: knn, mti, llm, ngram.",
    )


# ---- snd-inversion (Split-N-Denoise; issue 9) --------------------------------------------------------

SND_INVERSION_HELP = """Nearest-token inversion of Split-N-Denoise's noisy token rows (what `ppt snd serve` sees).

Each record's text is privatized as `ppt snd embed` does it (same --model, --eta and per-record noise
stream: with the same --seed these are the very rows the server received), and every noisy row is mapped
to the nearest vocabulary rows in L2. Per record: top-1 and top-k rates under --result-field; summary:
pooled rates over all non-special tokens with binomial intervals (--ci wilson or clopper-pearson).

[bold]Examples[/]
  ppt attack snd-inversion --model minilm --eta 100 --summary-only < texts.jsonl
  ppt attack snd-inversion --model minilm --eta 25 -k 10 --ci clopper-pearson -i texts.jsonl -o inv.jsonl
"""


@attack_app.command(
    "snd-inversion", help=SND_INVERSION_HELP, short_help="Invert SnD's noisy token rows to their nearest tokens."
)
def snd_inversion(
    eta: Annotated[
        float, typer.Option("--eta", help="The d_chi eta of the rows attacked.", rich_help_panel=ATTACK_PANEL)
    ] = 100.0,
    model: Annotated[
        str, typer.Option("--model", "-m", help="minilm, smollm2, a path or a hub id.", rich_help_panel=ATTACK_PANEL)
    ] = "minilm",
    k: Annotated[
        int, typer.Option("-k", min=1, help="Top-k reported besides top-1.", rich_help_panel=ATTACK_PANEL)
    ] = 10,
    ci: Annotated[
        str, typer.Option("--ci", help="Interval: wilson or clopper-pearson.", rich_help_panel=ATTACK_PANEL)
    ] = "wilson",
    max_length: Annotated[
        int, typer.Option("--max-length", min=1, help="Tokens kept per text.", rich_help_panel=ATTACK_PANEL)
    ] = 128,
    result_field: ResultFieldOpt = "attack",
    summary: SummaryOpt = "stderr",
    summary_only: SummaryOnlyOpt = False,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Seed of the noise (the same as `ppt snd embed --seed` to attack those rows)."),
    ] = None,
    device: DeviceOpt = "auto",
    input: InputOpt = "-",  # noqa: A002
    output: OutputOpt = "-",
    text_field: TextFieldOpt = "text",
    id_field: IdFieldOpt = "id",
    on_error: OnErrorOpt = "fail",
    batch_size: BatchSizeOpt = 32,
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        from ppt.io import stdout_guard
        from ppt.snd.split import SplitModel
        from ppt.stages.snd import SndInversionStage

        _check_summary(summary)

        def load():
            with stdout_guard():
                return SplitModel.load(model, device=device, max_length=max_length)

        runner = SndInversionStage(load, eta=eta, seed=seed, k=k, result_field=result_field, ci_method=ci)
        args = stream_args(
            input=input,
            output=output,
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            batch_size=batch_size,
            quiet=quiet,
            device=device,
        )
        raise typer.Exit(_run(runner, args, "attack snd-inversion", summary, summary_only))
