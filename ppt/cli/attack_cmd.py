"""`ppt attack knn|mti|llm|ngram|snd-inversion`: measure what an adversary recovers from sanitized text."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from ppt.cli.attack_common import (
    ATTACK_PANEL,
    AlignFieldOpt,
    OriginalOpt,
    ResultFieldOpt,
    SpaceOpt,
    StopwordsOpt,
    SummaryOnlyOpt,
    SummaryOpt,
    check_summary_target,
    run_attack,
    token_aligner,
)
from ppt.cli.kit import STREAM, StreamArgs, stream_command
from ppt.dist import pip_install

RAW_NOTE = (
    "Attacks are evaluation tools: they read the raw text from --original-field (e.g. what "
    "`ppt sanitize --keep-original FIELD` wrote). Keep such files local; never send them to the remote party."
)

# the choices of ppt.attacks.mti.MASK_LENGTHS (tests/cli/test_choices.py keeps them equal)
MaskLength = Literal["original", "one"]


@stream_command()
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
    stream: StreamArgs = STREAM,
) -> None:
    """Embedding inversion: is the original among the K vocabulary embeddings nearest to each perturbed token?

    Tokens are paired through the --alignment-field when records carry one, else by aligning
    --original-field and the text in the space (see `ppt.attacks.realign`). Success rates are pooled
    over tokens; privacy = 1 - rate with a 95% Wilson interval.

    [bold]Examples[/]
      ppt sanitize -m rantext -e 6 --keep-original raw < docs.jsonl | ppt attack knn --original-field raw
      ppt attack knn --original-field raw --space glove-6b-50d -k 1 -k 5 --summary-only < private.jsonl
    """
    from ppt.stages.attack import KnnRunner

    check_summary_target(summary)
    aligner = token_aligner(space, original_field, alignment_field, stopwords, stream.device, stream.quiet)
    runner = KnnRunner(aligner, tuple(k), result_field)
    raise typer.Exit(run_attack(runner, stream, "attack knn", summary, summary_only))


@stream_command()
def mti(
    model: Annotated[
        str,
        typer.Option(
            "--model", help="Masked LM: splade-tiny (offline), a local path or a hub id.", rich_help_panel=ATTACK_PANEL
        ),
    ] = "splade-tiny",
    mask_length: Annotated[
        MaskLength,
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
    stream: StreamArgs = STREAM,
) -> None:
    """Mask token inference: mask each perturbed token and let a masked LM predict the original.

    The masked span is the perturbed token's character span, mapped onto the masked LM's own tokens by
    offsets, so tokenizers never get compared position by position. Success: the prediction equals
    the original word (case-insensitive).

    [bold]Examples[/]
      ppt attack mti --original-field raw < private.jsonl
      ppt attack mti --model ./bert-base-uncased --mask-length one --original-field raw --summary-only < private.jsonl
    """
    from ppt.attacks.mti import MtiAttack
    from ppt.io import ExitCode, PptError, stdout_guard
    from ppt.models import load_masked_lm
    from ppt.stages.attack import MtiRunner

    check_summary_target(summary)
    aligner = token_aligner(space, original_field, alignment_field, stopwords, stream.device, stream.quiet)
    with stdout_guard():
        m, tok = load_masked_lm(model, device=stream.device)
    try:
        attack = MtiAttack(m, tok, mask_length=mask_length, max_copies=max_copies)
    except ValueError as e:
        raise PptError(f"{model}: {e}", ExitCode.CONFIG) from None
    runner = MtiRunner(aligner, attack, model, result_field)
    raise typer.Exit(run_attack(runner, stream, "attack mti", summary, summary_only))


@stream_command(batch_size=8)
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
    stream: StreamArgs = STREAM,
) -> None:
    """LLM inference: a generative model is asked to restore the original text from the perturbed one.

    Scores: token recovery rate (original words the perturbed text hid that the restoration brings
    back; the success rate) and Rouge-L F1 against the original (next to the perturbed text's own).
    The restoration is written to the result field.

    [bold]Examples[/]
      ppt attack llm --original-field raw < private.jsonl > restored.jsonl
      ppt attack llm --base-url http://localhost:8000/v1 --model qwen2 --original-field raw --summary-only < private.jsonl
    """
    from pathlib import Path

    from ppt.attacks.llm import PROMPT, LlmAttack
    from ppt.io import ExitCode, PptError, stdout_guard
    from ppt.lm.door import get_lm
    from ppt.stages.attack import LlmRunner

    if not original_field:
        raise PptError("ppt attack llm needs --original-field (the raw text to score against)", ExitCode.USAGE)
    check_summary_target(summary)
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
                    hint=f"install the remote extra: {pip_install('remote')}",
                ) from None
        else:
            backend = get_lm(model, device=stream.device, batch_size=stream.batch_size)
    try:
        attack = LlmAttack(backend, prompt=prompt, max_new_tokens=max_new_tokens)
    except ValueError as e:
        raise PptError(str(e), ExitCode.USAGE) from None
    runner = LlmRunner(attack, original_field, result_field)
    raise typer.Exit(run_attack(runner, stream, "attack llm", summary, summary_only))


@stream_command(omit={"device"})
def ngram(
    n: Annotated[
        list[int], typer.Option("--n", "-n", min=1, help="n-gram orders (repeatable).", rich_help_panel=ATTACK_PANEL)
    ] = [1, 2, 3],  # noqa: B006 - typer reads the default
    original_field: OriginalOpt = None,
    summary: SummaryOpt = "stderr",
    summary_only: SummaryOnlyOpt = False,
    result_field: ResultFieldOpt = "attack",
    stream: StreamArgs = STREAM,
) -> None:
    """N-gram leakage (InferDPT Table VI): share of the raw document's distinct word n-grams found in the
    text field (the remote model's output, or the perturbed prompt itself).

    [bold]Examples[/]
      ppt attack ngram --original-field raw < remote.jsonl
      ppt attack ngram --original-field raw --text-field completion -n 1 -n 2 --summary-only < remote.jsonl
    """
    from ppt.io import ExitCode, PptError
    from ppt.stages.attack import NgramRunner

    if not original_field:
        raise PptError("ppt attack ngram needs --original-field (the raw document)", ExitCode.USAGE)
    check_summary_target(summary)
    runner = NgramRunner(original_field, tuple(n), result_field)
    raise typer.Exit(run_attack(runner, stream, "attack ngram", summary, summary_only))


# ---- snd-inversion (Split-N-Denoise; issue 9) --------------------------------------------------------

# the choices of ppt.attacks.snd_inversion.METHODS (tests/cli/test_choices.py keeps them equal)
Interval = Literal["wilson", "clopper-pearson"]

SND_INVERSION_HELP = """Nearest-token inversion of Split-N-Denoise's noisy token rows (what `ppt snd serve` sees).

Each record's text is privatized as `ppt snd embed` does it (same --model, --eta and per-record noise
stream: with the same --seed these are the very rows the server received), and every noisy row is mapped
to the nearest vocabulary rows in L2. Per record: top-1 and top-k rates under --result-field; summary:
pooled rates over all non-special tokens with binomial intervals (--ci wilson or clopper-pearson).

[bold]Examples[/]
  ppt attack snd-inversion --model minilm --eta 100 --summary-only < texts.jsonl
  ppt attack snd-inversion --model minilm --eta 25 -k 10 --ci clopper-pearson -i texts.jsonl -o inv.jsonl
"""


@stream_command(batch_size=32)
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
        Interval, typer.Option("--ci", help="Interval: wilson or clopper-pearson.", rich_help_panel=ATTACK_PANEL)
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
    stream: StreamArgs = STREAM,
) -> None:
    from ppt.io import stdout_guard
    from ppt.snd.split import SplitModel
    from ppt.stages.snd import SndInversionStage

    check_summary_target(summary)

    def load():
        with stdout_guard():
            return SplitModel.load(model, device=stream.device, max_length=max_length)

    runner = SndInversionStage(load, eta=eta, seed=seed, k=k, result_field=result_field, ci_method=ci)
    raise typer.Exit(run_attack(runner, stream, "attack snd-inversion", summary, summary_only))


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Measure what an adversary recovers from sanitized text; privacy = 1 - success rate.\n\n" + RAW_NOTE,
        no_args_is_help=True,
        rich_markup_mode="rich",
    )
    for name, command in (("knn", knn), ("mti", mti), ("llm", llm), ("ngram", ngram)):
        group.command(name)(command)
    group.command(
        "snd-inversion", help=SND_INVERSION_HELP, short_help="Invert SnD's noisy token rows to their nearest tokens."
    )(snd_inversion)
    app.add_typer(
        group,
        name="attack",
        help="Measure what an adversary recovers: knn, mti, llm, ngram; privacy = 1 - success rate.\n\n" + RAW_NOTE,
        short_help="Privacy attacks on sanitized text: knn, mti, llm, ngram.",
    )
