"""`ppt serve`: an OpenAI-compatible HTTP server over a local causal LM, on one of two transports.

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /v1/models``, ``GET /health``.
What is served is decided without HTTP, once, in these modules:

    service.py         the Service contract (ServiceError, ClientGone)
    batching.py        ModelService: a local LM with dynamic batching (one worker thread owns the model)
    logprobs.py        per-token log-probabilities of a generated text
    api.py             routes, bearer auth, answering a POST (validation, n, logprobs, stream)
    framing.py         what the request line and headers decide: framing, body size, auth, routes
    limits.py          connection caps (in total and per client address) and the request deadline
    shapes.py          the OpenAI JSON bodies and streaming chunks

and carried by a transport:

    http_uvicorn.py    preferred: uvicorn + starlette (``http_starlette.py``),
                       ``pip install 'ppt-private-prompts[serve]'``
    http_stdlib.py     fallback: the standard library's http.server, hardened by hand

``make_server(..., transport="auto")`` picks uvicorn when ``uvicorn`` and ``starlette`` import, so the
same request gets the same answer, status and limits on either. Every request parameter is honoured
or refused (HTTP 400), never ignored. Request bodies and keys are never logged.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

from ppt.dist import pip_install
from ppt.remote.api import (  # noqa: F401 - re-exported: the server's public surface
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    SOCKET_TIMEOUT_S,
    Reply,
    answer,
    check_bearer,
    route,
)
from ppt.remote.batching import REQUEST_TIMEOUT_S, ModelService  # noqa: F401
from ppt.remote.logprobs import token_logprobs  # noqa: F401
from ppt.remote.service import ClientGone, Service, ServiceError  # noqa: F401
from ppt.remote.shapes import response, sse_events  # noqa: F401

TRANSPORTS = ("starlette", "stdlib")


def starlette_available() -> bool:
    """True when the preferred transport's packages (the ``serve`` extra) are installed."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("uvicorn", "starlette", "h11", "anyio"))
    except (ImportError, ValueError):  # a module blocked in sys.modules (tests simulate its absence so)
        return False


def pick_transport(transport: str = "auto") -> str:
    """``auto`` -> ``starlette`` when installed, else ``stdlib``; a named one must be installed."""
    if transport == "auto":
        return "starlette" if starlette_available() else "stdlib"
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be auto, {' or '.join(TRANSPORTS)} (got {transport!r})")
    if transport == "starlette" and not starlette_available():
        raise ImportError(f"the starlette transport needs uvicorn and starlette: {pip_install('serve')}")
    return transport


def describe_transport(name: str) -> str:
    """For the startup line: which HTTP server answers."""
    return "uvicorn+starlette" if name == "starlette" else "stdlib http.server"


def make_server(
    service: Service | None,
    host: str = "127.0.0.1",
    port: int = 8000,
    handler: Any = None,
    verbose: bool = False,
    *,
    transport: str = "auto",
    **options: Any,
) -> Any:
    """Bind (port 0 = an ephemeral port; read it from ``server.server_address``) without serving yet.

    ``options``: api_key, socket_timeout_s (the deadline for each whole request), max_connections,
    max_client_connections, max_body_bytes; the stdlib transport takes ``handler``
    (a BaseHTTPRequestHandler subclass), the starlette one ``wrap_app`` and ``shutdown_grace_s``.
    Returns an object with ``service`` (settable until serving), ``server_address``, ``base_url``,
    ``transport``, ``serve_forever()``, ``shutdown()`` (from another thread) and ``server_close()``.
    """
    name = "stdlib" if handler is not None and transport == "auto" else pick_transport(transport)
    if name == "starlette":
        from ppt.remote.http_uvicorn import UvicornServer

        return UvicornServer(service, host, port, verbose, **options)
    from ppt.remote.http_stdlib import OpenAIHandler, make_stdlib_server

    return make_stdlib_server(service, host, port, handler or OpenAIHandler, verbose, **options)


def start_server(
    service: Service,
    host: str = "127.0.0.1",
    port: int = 0,
    handler: Any = None,
    verbose: bool = False,
    *,
    transport: str = "auto",
    **options: Any,
) -> tuple[Any, threading.Thread]:
    """Bind and serve in a daemon thread (tests, benchmarks); stop with ``server.shutdown()`` then
    ``server.server_close()``. The socket listens before this returns, so clients may connect at once."""
    server = make_server(service, host, port, handler, verbose, transport=transport, **options)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name=f"ppt-serve-{server.transport}"
    )
    thread.start()
    return server, thread


def __getattr__(name: str) -> Any:  # the stdlib transport's classes, imported on use
    if name in ("OpenAIHandler", "OpenAIServer"):
        from ppt.remote import http_stdlib

        return getattr(http_stdlib, name)
    raise AttributeError(f"module 'ppt.remote.server' has no attribute {name!r}")
