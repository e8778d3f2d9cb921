"""`ppt serve`: an OpenAI-compatible HTTP server over a local causal LM (offline pipelines, tests, demos)."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import DeviceOpt, QuietOpt, Runtime, handle_errors
from ppt.cli.serving import (
    SERVER_PANEL,
    AllowRemoteOpt,
    ClientCapOpt,
    TimeoutOpt,
    bearer_token,
    bind,
    check_exposure,
    client_cap,
    serve_in_background,
    serve_until_stopped,
    stop_serving,
    write_port_file,
)

MODEL_PANEL = "Model"

HELP = """Serve a local causal LM behind an OpenAI-compatible API, so `ppt query` runs offline.

Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health. Concurrent
requests are generated together in batches (--max-batch, --batch-wait-ms); a request's "seed" makes its
sampling reproducible whatever it is batched with. n (up to 8), logprobs (completions logprobs=k, chat
logprobs/top_logprobs) and stream=true (server-sent events; each choice's text in one chunk) are
served; other parameters the model cannot honour are refused with HTTP 400, never ignored.

It listens on loopback addresses only, unless --allow-remote, which also requires --api-key-env NAME:
clients must then send "Authorization: Bearer $NAME" (the key is read from the environment, never from
the command line). A request must arrive whole (headers and body) within --timeout seconds, or its
connection is closed, slow clients like silent ones; the bearer token is checked before the body is
read. At most --max-connections are open at once, and at most --max-client-connections from one client
address (503 with Retry-After beyond). It answers as soon as it is bound: while the model loads, model
routes get 503 with Retry-After and /health 200; --port-file is written once the model is in. Runs
until Ctrl-C or SIGTERM. Nothing is written to
stdout; request bodies and keys are never logged.

Served by uvicorn with starlette when they are installed (the serve extra of ppt), else by the
standard library's http.server, with the same limits and answers; the startup line says which.

[bold]Examples[/]
  ppt serve --model smollm2 --port 8000 &
  curl -s http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model": "smollm2", "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 20}'
  ppt serve --model smollm2 --port 0 --port-file /tmp/ppt.port &   # ephemeral port, written to a file
  PPT_SERVE_KEY=$(openssl rand -hex 16) ppt serve --host 0.0.0.0 --allow-remote --api-key-env PPT_SERVE_KEY
"""


def serve(
    model: Annotated[
        str,
        typer.Option(
            "--model", "-m", help="Causal LM: alias (smollm2), local path or hub id.", rich_help_panel=MODEL_PANEL
        ),
    ] = "smollm2",
    host: Annotated[
        str,
        typer.Option(
            "--host", help="Address to bind: a loopback address unless --allow-remote.", rich_help_panel=SERVER_PANEL
        ),
    ] = "127.0.0.1",
    allow_remote: AllowRemoteOpt = False,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            help="NAME of the environment variable holding the bearer token clients must send (never the token itself).",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = None,
    timeout: TimeoutOpt = 30.0,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            min=1,
            help="Most connections open at once; more are answered 503.",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = 64,
    max_client_connections: ClientCapOpt = None,
    port: Annotated[
        int,
        typer.Option(
            "--port",
            "-p",
            min=0,
            max=65535,
            help="Port (0 = an ephemeral port; see --port-file).",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = 8000,
    port_file: Annotated[
        str | None,
        typer.Option(
            "--port-file",
            help="Write the bound port to this file once listening (for scripts using --port 0).",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = None,
    served_name: Annotated[
        str | None,
        typer.Option(
            "--served-name",
            help="Model id reported by /v1/models and in responses (default: --model).",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = None,
    max_batch: Annotated[
        int | None,
        typer.Option(
            "--max-batch",
            min=1,
            help="Most requests generated together (default: 8 on a CPU, 256 on CUDA).",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = None,
    batch_wait_ms: Annotated[
        float,
        typer.Option(
            "--batch-wait-ms",
            min=0.0,
            help="How long the first request of a batch waits for company.",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = 10.0,
    max_tokens_limit: Annotated[
        int,
        typer.Option(
            "--max-tokens-limit",
            min=1,
            help="Reject requests asking for more tokens than this.",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = 2048,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Log each request line and status to stderr (never bodies).",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = False,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="auto, float32, float16, bfloat16 (default: bfloat16 on CUDA, the model's own elsewhere).",
            rich_help_panel=MODEL_PANEL,
        ),
    ] = None,
    runtime: Annotated[
        Runtime,
        typer.Option(
            "--runtime",
            help="transformers (ppt's batched decode loop) or vllm (when installed; CUDA only; no logprobs).",
            rich_help_panel=MODEL_PANEL,
        ),
    ] = "transformers",
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        import os
        import sys

        from ppt.io import stdout_guard
        from ppt.lm.door import get_lm
        from ppt.remote.server import ModelService, describe_transport, make_server

        api_key = bearer_token(api_key_env, example="PPT_SERVE_KEY")
        check_exposure(
            host,
            allow_remote,
            api_key,
            example="PPT_SERVE_KEY",
            exposed="the bearer token and prompts cross the network",
            why=" so clients need a bearer token",
        )
        server = bind(
            make_server,
            host,
            port,
            verbose=verbose,
            api_key=api_key,
            socket_timeout_s=timeout,
            max_connections=max_connections,
            max_client_connections=client_cap(host, max_connections, max_client_connections),
        )
        thread = serve_in_background(server)  # 503 "loading" until the model is in, never a hang
        try:
            with stdout_guard():
                gen = get_lm(model, runtime=runtime, device=device, dtype=dtype, batch_size=max_batch)
        except BaseException:
            stop_serving(server, thread)
            raise
        max_batch = max_batch or gen.batch_size or 256
        service = ModelService(
            gen,
            served_name or model,
            max_batch=max_batch,
            max_wait_s=batch_wait_ms / 1000,
            max_tokens_limit=max_tokens_limit,
        )
        # a request naming another model gets OpenAI's 404 model_not_found: a typo in a client's --model is
        # caught instead of answered by this model
        service.served_names = frozenset({service.name})
        server.service = service
        write_port_file(port_file, server)
        if not quiet:
            print(
                f"ppt: serve: {served_name or model} on {server.base_url} ({describe_transport(server.transport)}, "
                f"max batch {max_batch}, device {gen.describe()['device']}{'; bearer token required' if api_key else ''}"
                "); Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
        # the server runs in its thread (uvicorn's graceful shutdown included); this thread waits for Ctrl-C or
        # SIGTERM and stops it
        try:
            serve_until_stopped(server, thread)
        finally:
            busy = service.close()
            if not quiet:
                print("ppt: serve: stopped", file=sys.stderr, flush=True)
        if busy:  # a batch is still generating: leave now instead of letting torch abort at teardown
            sys.stderr.flush()
            os._exit(0)


def register(app: typer.Typer) -> None:
    app.command(
        "serve", help=HELP, short_help="OpenAI-compatible HTTP server over a local model (offline pipelines, tests)."
    )(serve)
