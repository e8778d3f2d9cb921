"""What the model servers (`ppt serve`, `ppt snd serve`) and their clients share on the command line: the
bearer token read from the environment, the loopback-only rule, binding and serving (503 "loading")
before the model loads, the port file, the connection limits, and serving until Ctrl-C or SIGTERM."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ppt.cli.common import warn
from ppt.io.errors import PptError
from ppt.io.exitcodes import ExitCode


def bearer_token(api_key_env: str | None, example: str | None = None) -> str | None:
    """The token in the variable --api-key-env names (None without the flag); exit 78 when it is unset or
    empty. ``example``: a variable name for the hint on how to make one."""
    if api_key_env is None:
        return None
    from ppt.remote.auth import check_env_name, env_not_set_message

    check_env_name(api_key_env)
    key = os.environ.get(api_key_env, "").strip() or None
    if key is None:
        hint = f"export a random token first, e.g. export {example}=$(openssl rand -hex 16)" if example else None
        raise PptError(env_not_set_message(api_key_env), ExitCode.CONFIG, hint=hint)
    return key


def check_exposure(
    host: str, allow_remote: bool, api_key: str | None, *, example: str, exposed: str, why: str = ""
) -> None:
    """A --host off the loopback needs --allow-remote and a bearer token (exit 2 without), and is warned
    about: plain http carries ``exposed`` (what crosses the network) in the clear."""
    from ppt.remote.auth import is_loopback_host

    if is_loopback_host(host):
        return
    if not allow_remote:
        raise PptError(
            f"--host {host[:64]} is not a loopback address; refusing to expose the model",
            ExitCode.USAGE,
            hint="keep the default 127.0.0.1, or pass --allow-remote with --api-key-env NAME" + why,
        )
    if api_key is None:
        raise PptError(
            "--allow-remote requires --api-key-env NAME (clients must send a bearer token)",
            ExitCode.USAGE,
            hint=f"export {example}=$(openssl rand -hex 16), then pass --api-key-env {example}",
        )
    warn(f"serving on {host[:64]} over plain http: {exposed} unencrypted; put a TLS proxy in front")


TIMEOUT_HELP = (
    "Seconds a client has to send a whole request (request line, headers and body), counted from the moment its"
    " connection is ready for one (accepted, or the previous answer sent); a client too slow or silent is"
    " disconnected. Not counted while a request is answered."
)
CLIENT_CAP_HELP = (
    "Most connections open at once from one client address (503 beyond), so one client cannot take every slot"
    " (default: --max-connections on a loopback --host, where every client is this machine; a quarter of it"
    " otherwise)."
)
SERVER_PANEL = "Server"

# the options ppt serve and ppt snd serve both take, with the same meaning and help
AllowRemoteOpt = Annotated[
    bool,
    typer.Option(
        "--allow-remote", help="Allow a non-loopback --host (requires --api-key-env).", rich_help_panel=SERVER_PANEL
    ),
]
TimeoutOpt = Annotated[
    float,
    typer.Option("--timeout", min=0.1, help=TIMEOUT_HELP, rich_help_panel=SERVER_PANEL),
]
ClientCapOpt = Annotated[
    int | None,
    typer.Option(
        "--max-client-connections",
        min=1,
        help=CLIENT_CAP_HELP,
        show_default=False,
        rich_help_panel=SERVER_PANEL,
    ),
]


def client_cap(host: str, max_connections: int, given: int | None) -> int:
    """--max-client-connections, or its default for ``host`` (every slot on a loopback address, a quarter
    of them on one other machines reach), never more than --max-connections."""
    from ppt.remote.auth import is_loopback_host
    from ppt.remote.limits import default_client_cap

    if given is not None:
        return max(1, min(given, max_connections))
    return default_client_cap(max_connections, is_loopback_host(host))


def bind(make_server: Callable[..., Any], host: str, port: int, **options: Any) -> Any:
    """The server bound to host:port with no service yet: a taken port fails at once (exit 69), before
    seconds of model loading."""
    try:
        return make_server(None, host, port, **options)
    except OSError as e:
        raise PptError(
            f"cannot bind {host}:{port}: {e.strerror}",
            ExitCode.UNAVAILABLE,
            hint="pick another --port, or --port 0 for a free one",
        ) from None


def write_port_file(path: str | None, server: Any) -> None:
    """Write the bound port to ``path`` (for scripts that ask for --port 0), atomically."""
    if not path:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        fh.write(f"{server.server_address[1]}\n")
    os.replace(tmp, path)


def serve_in_background(server: Any) -> Any:
    """Start answering at once, in a daemon thread, while the caller loads the model: until
    ``server.service`` is set, model routes answer 503 "the model is still loading" with Retry-After
    (a request never hangs on a socket that is not served yet) and /health answers 200. Returns the thread."""
    import threading

    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True, name="ppt-serve")
    thread.start()
    return thread


def stop_serving(server: Any, thread: Any) -> None:
    """Shut the server down (in-flight requests are answered or cut off), wait for its thread, close it."""
    try:
        server.shutdown()
        thread.join(timeout=30)
    finally:
        server.server_close()


def serve_until_stopped(server: Any, thread: Any) -> None:
    """Wait while ``thread`` serves, until Ctrl-C or SIGTERM, then stop the server and close it."""
    import signal
    import threading

    stop = threading.Event()

    def on_sigterm(signum, frame):  # noqa: ARG001 - signal handler signature
        stop.set()

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        while not stop.is_set() and thread.is_alive():
            stop.wait(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        stop_serving(server, thread)
