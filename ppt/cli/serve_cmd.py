"""`ppt serve`: an OpenAI-compatible HTTP server over a local causal LM (offline pipelines, tests, demos)."""

from __future__ import annotations

from typing import Annotated

import typer

from ppt.cli.common import DeviceOpt, QuietOpt, handle_errors

SERVER_PANEL = "Server"
MODEL_PANEL = "Model"

HELP = """Serve a local causal LM behind an OpenAI-compatible API, so `ppt query` runs offline.

Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health. Concurrent
requests are generated together in batches (--max-batch, --batch-wait-ms); a request's "seed" makes its
sampling reproducible whatever it is batched with. Runs until Ctrl-C or SIGTERM. Nothing is written to
stdout; request bodies are never logged. There is no authentication: keep the default 127.0.0.1.

[bold]Examples[/]
  ppt serve --model smollm2 --port 8000 &
  curl -s http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model": "smollm2", "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 20}'
  ppt serve --model smollm2 --port 0 --port-file /tmp/ppt.port &   # ephemeral port, written to a file
"""


def serve(
    model: Annotated[str, typer.Option("--model", "-m", help="Causal LM: alias (smollm2), local path or hub id.", rich_help_panel=MODEL_PANEL)] = "smollm2",
    host: Annotated[str, typer.Option("--host", help="Address to bind; 127.0.0.1 keeps it local.", rich_help_panel=SERVER_PANEL)] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port (0 = an ephemeral port; see --port-file).", rich_help_panel=SERVER_PANEL)] = 8000,
    port_file: Annotated[str | None, typer.Option("--port-file", help="Write the bound port to this file once listening (for scripts using --port 0).", rich_help_panel=SERVER_PANEL)] = None,
    served_name: Annotated[str | None, typer.Option("--served-name", help="Model id reported by /v1/models and in responses (default: --model).", rich_help_panel=SERVER_PANEL)] = None,
    max_batch: Annotated[int, typer.Option("--max-batch", min=1, help="Most requests generated together.", rich_help_panel=SERVER_PANEL)] = 8,
    batch_wait_ms: Annotated[float, typer.Option("--batch-wait-ms", min=0.0, help="How long the first request of a batch waits for company.", rich_help_panel=SERVER_PANEL)] = 10.0,
    max_tokens_limit: Annotated[int, typer.Option("--max-tokens-limit", min=1, help="Reject requests asking for more tokens than this.", rich_help_panel=SERVER_PANEL)] = 2048,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each request line and status to stderr (never bodies).", rich_help_panel=SERVER_PANEL)] = False,
    dtype: Annotated[str | None, typer.Option("--dtype", help="auto, float32, float16, bfloat16.", rich_help_panel=MODEL_PANEL)] = None,
    device: DeviceOpt = "auto",
    quiet: QuietOpt = False,
) -> None:
    with handle_errors():
        import os
        import signal
        import sys
        import threading

        from ppt.cli.common import warn
        from ppt.io import ExitCode, PptError, stdout_guard
        from ppt.lm.generate import LocalGenerator
        from ppt.remote.server import ModelService, make_server

        try:  # bind first: a taken port fails at once, before seconds of model loading
            server = make_server(None, host, port, verbose=verbose)
        except OSError as e:
            raise PptError(f"cannot bind {host}:{port}: {e.strerror}", ExitCode.UNAVAILABLE,
                           hint="pick another --port, or --port 0 for a free one") from None
        try:
            with stdout_guard():
                gen = LocalGenerator.load(model, device=device, dtype=dtype, batch_size=max_batch)
        except BaseException:
            server.server_close()
            raise
        service = ModelService(gen, served_name or model, max_batch=max_batch, max_wait_s=batch_wait_ms / 1000,
                               max_tokens_limit=max_tokens_limit)
        server.service = service
        if not (host in ("localhost", "::1") or host.startswith("127.")):
            warn(f"serving on {host}: the server has no authentication; anyone who can reach it can use the model")
        if port_file:
            tmp = f"{port_file}.{os.getpid()}.tmp"
            with open(tmp, "w") as fh:
                fh.write(f"{server.server_address[1]}\n")
            os.replace(tmp, port_file)
        if not quiet:
            print(f"ppt: serve: {served_name or model} on {server.base_url} (max batch {max_batch}, "
                  f"device {gen.describe()['device']}); Ctrl-C to stop", file=sys.stderr, flush=True)

        def stop(signum, frame):  # noqa: ARG001 - signal handler signature
            threading.Thread(target=server.shutdown, daemon=True).start()

        signal.signal(signal.SIGTERM, stop)
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
            busy = service.close()
            if not quiet:
                print("ppt: serve: stopped", file=sys.stderr, flush=True)
        if busy:  # a batch is still generating: leave now instead of letting torch abort at teardown
            sys.stderr.flush()
            os._exit(0)


def register(app: typer.Typer) -> None:
    app.command("serve", help=HELP, short_help="OpenAI-compatible HTTP server over a local model (offline pipelines, tests).")(serve)
