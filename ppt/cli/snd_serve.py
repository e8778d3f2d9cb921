"""`ppt snd serve`: the server half of Split-N-Denoise (privatized token rows in, pooled embeddings out)."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import DeviceOpt, QuietOpt, handle_errors
from ppt.cli.serving import (
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
from ppt.cli.snd_common import SERVER_PANEL, MaxLenOpt, ModelOpt

SERVE_HELP = """Serve the server half of Split-N-Denoise: the model on privatized token rows, pooled.

Endpoints: GET /health, GET /v1/snd/info (model id and hash, widths), POST /v1/snd/embed (base64 float32
rows in, pooled embeddings out). It never sees text or token ids. Loopback addresses only, unless
--allow-remote, which also requires --api-key-env NAME (clients send "Authorization: Bearer $NAME").
A request must arrive whole within --timeout seconds (slow clients are cut like silent ones); at most
--max-connections are open at once, --max-client-connections from one client address (503 beyond).
While the model loads, requests get 503 with Retry-After (--port-file is written once it is in). Bodies
are never logged. Runs until Ctrl-C or SIGTERM.

[bold]Examples[/]
  ppt snd serve --model minilm --port 8100 &
  ppt snd embed --model minilm --eta 100 --emit noisy --server http://127.0.0.1:8100 < notes.jsonl
"""


def serve(
    model: ModelOpt = "minilm",
    host: Annotated[
        str,
        typer.Option(
            "--host", help="Address to bind: a loopback address unless --allow-remote.", rich_help_panel=SERVER_PANEL
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port",
            "-p",
            min=0,
            max=65535,
            help="Port (0 = ephemeral; see --port-file).",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = 8100,
    port_file: Annotated[
        str | None,
        typer.Option(
            "--port-file", help="Write the bound port to this file once listening.", rich_help_panel=SERVER_PANEL
        ),
    ] = None,
    allow_remote: AllowRemoteOpt = False,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            help="NAME of the environment variable holding the bearer token clients must send.",
            rich_help_panel=SERVER_PANEL,
        ),
    ] = None,
    timeout: TimeoutOpt = 30.0,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections", min=1, help="Most connections open at once (503 beyond).", rich_help_panel=SERVER_PANEL
        ),
    ] = 32,
    max_client_connections: ClientCapOpt = None,
    max_length: MaxLenOpt = 128,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Log request lines and statuses (never bodies).", rich_help_panel=SERVER_PANEL
        ),
    ] = False,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        import sys

        from ppt.io import stdout_guard
        from ppt.remote.snd import SndService, make_snd_server
        from ppt.snd.split import SplitModel

        api_key = bearer_token(api_key_env, example="PPT_SND_KEY")
        check_exposure(
            host, allow_remote, api_key, example="PPT_SND_KEY", exposed="the bearer token crosses the network"
        )
        server = bind(
            make_snd_server,
            host,
            port,
            api_key=api_key,
            socket_timeout_s=timeout,
            max_connections=max_connections,
            max_client_connections=client_cap(host, max_connections, max_client_connections),
            verbose=verbose,
        )
        thread = serve_in_background(server)  # 503 "loading" until the model is in, never a hang
        try:
            with stdout_guard():
                split = SplitModel.load(model, device=device, max_length=max_length)
        except BaseException:
            stop_serving(server, thread)
            raise
        server.service = SndService(split)
        write_port_file(port_file, server)
        if not quiet:
            print(
                f"ppt: snd serve: {split.name} (hash {split.hash}) on {server.base_url}"
                f"{'; bearer token required' if api_key else ''}; Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
        try:
            serve_until_stopped(server, thread)
        finally:
            if not quiet:
                print("ppt: snd serve: stopped", file=sys.stderr, flush=True)
