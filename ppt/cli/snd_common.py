"""Options the `ppt snd` subcommands share (the model, the noise, the server panel)."""

from __future__ import annotations

from typing import Annotated

import typer

MODEL_PANEL = "Model and noise"
TRAIN_PANEL = "Training"
SERVER_PANEL = "Server"

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="minilm (sentence encoder), smollm2 (causal LM, mean of last hidden states), a local path or a hub id.",
        rich_help_panel=MODEL_PANEL,
    ),
]
EtaOpt = Annotated[
    float,
    typer.Option(
        "--eta",
        help="d_chi noise: each token vector is eta * d_chi private (L2 distance in the input-embedding space); larger = less noise; inf = none.",
        rich_help_panel=MODEL_PANEL,
    ),
]
MaxLenOpt = Annotated[
    int,
    typer.Option("--max-length", min=1, help="Tokens kept per text (the rest is cut).", rich_help_panel=MODEL_PANEL),
]
