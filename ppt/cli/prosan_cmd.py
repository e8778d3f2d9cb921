"""`ppt prosan distill`: distil ProSan's (original, anonymized) pairs into a small causal LM for
`ppt sanitize --mech prosan-lite --model DIR`."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import DeviceOpt, QuietOpt, handle_errors

DISTILL_HELP = """Fine-tune a small causal LM on (original, anonymized) pairs that ProSan produced, with a progress
bar (stderr) and checkpoints (DIR/checkpoint-STEP); the final model and prosan_lite.json go to DIR. A JSON
summary (steps, pairs, first/last loss) is printed on stdout.

[bold]Examples[/]
  ppt eval make-pii -n 200 | ppt sanitize --mech prosan --keep-original original > pairs.jsonl
  ppt prosan distill --pairs pairs.jsonl -o lite-model --epochs 2
  ppt sanitize --mech prosan-lite --model lite-model < prompts.jsonl
"""


def distill_cmd(
    pairs: Annotated[str, typer.Option("--pairs", help="JSONL of ProSan's output with the raw prompt kept.")],
    out_dir: Annotated[str, typer.Option("--output", "-o", help="Directory for the model and checkpoints.")],
    base_model: Annotated[
        str, typer.Option("--base-model", help="Causal LM to fine-tune (alias or path).")
    ] = "smollm2",
    source_field: Annotated[str, typer.Option("--source-field", help="Field with the raw prompt.")] = "original",
    target_field: Annotated[
        str, typer.Option("--target-field", help="Field with ProSan's anonymized prompt.")
    ] = "text",
    epochs: Annotated[int, typer.Option("--epochs", min=1, help="Passes over the pairs.")] = 1,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1, help="Stop after this many steps.")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Pairs per step.")] = 4,
    lr: Annotated[float, typer.Option("--lr", help="AdamW learning rate (the paper's 1e-4).")] = 1e-4,
    weight_decay: Annotated[
        float, typer.Option("--weight-decay", help="AdamW weight decay (the paper's 1e-2).")
    ] = 1e-2,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=8, help="Tokens per pair (prompt + target).")] = 256,
    checkpoint_every: Annotated[
        int, typer.Option("--checkpoint-every", min=0, help="Steps between checkpoints (0: none).")
    ] = 50,
    keep: Annotated[int, typer.Option("--keep", min=0, help="Checkpoints kept.")] = 2,
    seed: Annotated[int, typer.Option("--seed", help="Shuffling seed.")] = 0,
    any_teacher: Annotated[
        bool, typer.Option("--any-teacher", help="Accept pairs not stamped as ProSan's output.")
    ] = False,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        import orjson

        from ppt.io import real_stdout, stdout_guard
        from ppt.stages.prosan_distill import run_distill

        with stdout_guard():
            summary = run_distill(
                pairs,
                out_dir,
                source_field=source_field,
                target_field=target_field,
                any_teacher=any_teacher,
                quiet=quiet,
                base_model=base_model,
                epochs=epochs,
                max_steps=max_steps,
                batch_size=batch_size,
                lr=lr,
                weight_decay=weight_decay,
                max_tokens=max_tokens,
                checkpoint_every=checkpoint_every,
                keep=keep,
                seed=seed,
                device=device,
            )
        real_stdout().write(orjson.dumps(summary).decode() + "\n")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="ProSan's lightweight mode: distil ProSan into a small model.", no_args_is_help=True)
    group.command("distill", help=DISTILL_HELP, short_help="Fine-tune a small causal LM on ProSan's pairs.")(
        distill_cmd
    )
    app.add_typer(
        group,
        name="prosan",
        help="ProSan's lightweight mode: distil ProSan into a small model (`distill`).",
        short_help="Distil ProSan into a small causal LM for --mech prosan-lite.",
    )
