"""`ppt snd`: Split-N-Denoise private embeddings (train-denoiser, embed; serve in snd_serve.py)."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from ppt.cli.common import DeviceOpt, QuietOpt, SeedOpt, TextFieldOpt, handle_errors
from ppt.cli.kit import STREAM, StreamArgs, stream_command
from ppt.cli.serving import bearer_token
from ppt.cli.snd_common import MODEL_PANEL, SERVER_PANEL, TRAIN_PANEL, EtaOpt, MaxLenOpt, ModelOpt
from ppt.cli.snd_serve import SERVE_HELP, serve

# the choices of ppt.snd.vectors.FORMATS (tests/cli/test_choices.py keeps them equal)
VectorFormat = Literal["jsonl", "npy", "parquet"]

TRAIN_HELP = """Train the client-side denoiser for one model and eta on a public corpus (JSONL, --text-field).

Each epoch draws fresh d_chi noise for every text (one Gamma(d, 1/eta) radius per token vector times a
uniform direction, clipped to the largest token-embedding norm), runs the model on the noisy rows, and
fits a small transformer (the noisy output embedding, the noisy token rows and the noise -> the clean
output embedding) with an MSE loss. Progress on stderr; checkpoints every --checkpoint-every steps and at
each epoch end; --resume continues an interrupted run. On the GPU when there is one (--device).

The result is a cache artifact keyed by the model hash, eta, the architecture and the training recipe
(`ppt cache ls|verify` cover it; an identical request is answered from the cache), or the directory -o.
Prints one JSON line: where it went, its hash, the training time and the last epoch's losses (with the
loss of no denoising on the same draws). Train on public data only: the denoiser is shared with clients.

[bold]Examples[/]
  ppt snd train-denoiser --model minilm --corpus public.jsonl --eta 100 --epochs 3
  ppt snd train-denoiser --model minilm --corpus public.jsonl --eta 100 -o den100/ --resume
"""

EMBED_HELP = """Split-N-Denoise embeddings of each record's text.

The client half runs here: the text's tokens become input-embedding rows, get d_chi noise and the clip;
the server half (the rest of the model and its pooling) runs in-process, or behind --server URL (a
`ppt snd serve` of the same model), which receives only the noisy rows. With --denoiser the answer is
denoised locally. Vectors go into the record as float lists (snd_noisy, snd_denoised, and snd_clean, the
local model's clean output for evaluation such as `ppt eval mi`; --emit picks), or
with --format npy|parquet into files next to --vectors PREFIX (the record then holds snd_row). Each
record gets a [bold]ppt.snd[/] stamp: eta, clip bound, the notion (eta * d_chi metric LDP per token,
unit: L2 distance in the model's input-embedding space), the model id and hash, the denoiser's hash.
The output file is created 0600 (it carries embeddings of private text). eta = inf (no noise) is
refused with --server.

[bold]Examples[/]
  ppt snd embed --model minilm --eta 100 --denoiser auto < notes.jsonl > emb.jsonl
  ppt snd embed --model minilm --eta 100 --emit noisy --server http://127.0.0.1:8100 -i notes.jsonl
  ppt snd embed --model minilm --eta 500 --denoiser den500/ --format npy --vectors out/emb -i big.jsonl -o idx.jsonl
"""


def train_denoiser(
    corpus: Annotated[
        str, typer.Option("--corpus", help="Public JSONL corpus to train on.", rich_help_panel=TRAIN_PANEL)
    ],
    eta: EtaOpt = 100.0,
    model: ModelOpt = "minilm",
    text_field: TextFieldOpt = "text",
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Use at most this many texts.", rich_help_panel=TRAIN_PANEL)
    ] = None,
    epochs: Annotated[
        int,
        typer.Option("--epochs", min=1, help="Passes over the corpus (fresh noise each).", rich_help_panel=TRAIN_PANEL),
    ] = 3,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Texts per step.", rich_help_panel=TRAIN_PANEL)
    ] = 32,
    lr: Annotated[
        float, typer.Option("--lr", min=0.0, help="AdamW learning rate.", rich_help_panel=TRAIN_PANEL)
    ] = 1e-3,
    width: Annotated[int, typer.Option("--width", min=8, help="Denoiser width.", rich_help_panel=TRAIN_PANEL)] = 128,
    layers: Annotated[
        int, typer.Option("--layers", min=1, help="Denoiser transformer layers.", rich_help_panel=TRAIN_PANEL)
    ] = 2,
    heads: Annotated[
        int, typer.Option("--heads", min=1, help="Attention heads (must divide --width).", rich_help_panel=TRAIN_PANEL)
    ] = 4,
    ff: Annotated[int, typer.Option("--ff", min=8, help="Feed-forward width.", rich_help_panel=TRAIN_PANEL)] = 256,
    max_length: MaxLenOpt = 128,
    checkpoint_every: Annotated[
        int,
        typer.Option(
            "--checkpoint-every",
            min=1,
            help="Steps between checkpoints (also at each epoch end).",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = 200,
    checkpoint_dir: Annotated[
        str | None,
        typer.Option(
            "--checkpoint-dir",
            help="Where checkpoints go (default: a build directory in the cache, removed when done).",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue from the last checkpoint of the same model, eta, architecture and corpus.",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = False,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the denoiser to this directory instead of the cache.",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    seed: SeedOpt = None,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        import math

        import orjson

        from ppt.io import ExitCode, PptError, stdout_guard
        from ppt.snd.split import SplitModel
        from ppt.snd.train import TrainConfig
        from ppt.stages.snd import read_texts, train_and_store

        if math.isinf(eta) or not eta > 0:
            raise PptError("--eta must be a finite number > 0 to train a denoiser", ExitCode.USAGE)
        if width % heads:
            raise PptError("--heads must divide --width", ExitCode.USAGE)
        texts = read_texts(corpus, text_field, limit)
        with stdout_guard():
            split = SplitModel.load(model, device=device, max_length=max_length)
        cfg = TrainConfig(
            eta=eta,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            seed=seed,
            checkpoint_every=checkpoint_every,
            arch={"width": width, "layers": layers, "heads": heads, "ff": ff},
        )
        with stdout_guard():
            summary = train_and_store(
                split, texts, cfg, out_dir=output, checkpoint_dir=checkpoint_dir, resume=resume, quiet=quiet
            )
        typer.echo(orjson.dumps(summary).decode())


# the output holds embeddings of private text: created 0600
@stream_command(batch_size=32, private=True)
def embed(
    eta: EtaOpt = 100.0,
    model: ModelOpt = "minilm",
    denoiser: Annotated[
        str | None,
        typer.Option(
            "--denoiser",
            help="A directory from train-denoiser -o, a cache key, or auto (the newest cached one for this model and eta).",
            rich_help_panel=MODEL_PANEL,
        ),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            help="URL of a `ppt snd serve` (default: the server half runs in-process).",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            help="NAME of the environment variable holding the server's bearer token.",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = None,
    emit: Annotated[
        str,
        typer.Option(
            "--emit",
            help="Comma-separated: noisy, denoised, clean (default: both with --denoiser, else noisy).",
            rich_help_panel=MODEL_PANEL,
        ),
    ] = "",
    fmt: Annotated[
        VectorFormat,
        typer.Option("--format", help="jsonl (vectors in the record), npy or parquet (vector files at --vectors)."),
    ] = "jsonl",
    vectors: Annotated[
        str | None,
        typer.Option(
            "--vectors",
            help="Prefix of the vector files for --format npy|parquet (PREFIX.noisy.npy, PREFIX.parquet, ...).",
        ),
    ] = None,
    field_prefix: Annotated[str, typer.Option("--field-prefix", help="Prefix of the output fields.")] = "snd_",
    max_length: MaxLenOpt = 128,
    seed: SeedOpt = None,
    stream: StreamArgs = STREAM,
) -> None:
    from ppt.io import run_stream, stdout_guard
    from ppt.rng import warn_if_seeded
    from ppt.snd.split import SplitModel
    from ppt.stages.snd import SndEmbedStage

    kinds = tuple(e.strip() for e in emit.split(",") if e.strip()) or (
        ("noisy", "denoised") if denoiser else ("noisy",)
    )
    pool, where = None, "in-process"
    if server is not None:
        from ppt.remote.auth import redact_url
        from ppt.remote.snd import SndClient

        pool = SndClient(server, api_key=bearer_token(api_key_env))
        where = redact_url(pool.base_url)
    warn_if_seeded(seed)

    def load():
        with stdout_guard():
            return SplitModel.load(model, device=stream.device, max_length=max_length)

    stage = SndEmbedStage(
        load,
        eta=eta,
        seed=seed,
        denoiser=denoiser,
        pool=pool,
        server=where,
        emit=kinds,
        fmt=fmt,
        vectors=vectors,
        field_prefix=field_prefix,
        device=stream.device,
    )
    try:
        code = run_stream(stream, stage, desc="snd embed")
        stage.finish()
    except BaseException:
        stage.abort()
        raise
    finally:
        if pool is not None:
            pool.close()
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Split-N-Denoise: embeddings from a server-side model without sending text.", no_args_is_help=True
    )
    group.command("train-denoiser", help=TRAIN_HELP, short_help="Train the client-side denoiser on a public corpus.")(
        train_denoiser
    )
    group.command(
        "embed", help=EMBED_HELP, short_help="Private embeddings: noise on the client, model on the server, denoise."
    )(embed)
    group.command(
        "serve", help=SERVE_HELP, short_help="Serve the model half: privatized token rows in, pooled embeddings out."
    )(serve)
    app.add_typer(group, name="snd", help="Split-N-Denoise private embeddings: train-denoiser, embed, serve.")
