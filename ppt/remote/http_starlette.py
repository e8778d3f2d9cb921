"""The starlette application of `ppt serve`'s preferred transport (served by ``ppt.remote.http_uvicorn``).

One catch-all route hands every request to ``ppt.remote.api``, so routes, auth, validation and reply
bodies are the stdlib transport's. What is the app's own: the header size limit (h11 bounds only
headers that arrive in pieces), the body size limit, enforced while the body streams in (Content-Length
or chunked), and the blocking model call, run in a worker thread (never on the event loop) while a
watcher task notices a client that disconnects, so its queued request is dropped instead of generated.
Worker threads are capped at ``max_connections``.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import anyio
import anyio.to_thread
import orjson
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ppt.remote.api import (
    HEADERS_TOO_LARGE,
    LOADING,
    MAX_HEADER_BYTES,
    SHORT_BODY,
    UNAUTHORIZED_HEADERS,
    Reply,
    answer,
    check_bearer,
    declared_length,
    route,
    too_large,
    unrouted,
)
from ppt.remote.service import ClientGone, Service, ServiceError
from ppt.remote.shapes import models_body, sse_body

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class Host(Protocol):
    """What the app reads at request time (the transport object: its service is set after binding)."""

    service: Service | None
    api_key: str | None
    max_body_bytes: int
    max_connections: int
    stopping: threading.Event


def json_response(status: int, obj: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(obj), status_code=status, media_type="application/json", headers=headers)


def error_response(err: ServiceError, headers: dict[str, str] | None = None, *, close: bool = False) -> Response:
    """``close``: the request's body may be unread, so the connection must not carry another request."""
    return json_response(err.status, err.body(), {**(headers or {}), **({"Connection": "close"} if close else {})})


async def read_body(request: Request, max_bytes: int) -> bytes | ServiceError:
    """The whole body, or the error to answer: a declared or streamed size over ``max_bytes`` (413),
    a bad Content-Length (400), or a client that closed before the end (400; nobody reads it)."""
    length = declared_length(request.headers.getlist("content-length"), max_bytes)
    if isinstance(length, ServiceError):
        return length
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                return too_large(max_bytes)
            chunks.append(chunk)
    except ClientDisconnect:
        return SHORT_BODY
    return b"".join(chunks)


async def run_answer(
    host: Host, request: Request, kind: str, raw: bytes, limiter: anyio.CapacityLimiter
) -> Reply | None:
    """``api.answer`` in a worker thread; None when the client left or the server is stopping first."""
    left = threading.Event()

    async def watch() -> None:  # the body is read: the next ASGI message can only be a disconnect
        while (await request.receive())["type"] != "http.disconnect":
            pass
        left.set()

    def gone() -> bool:
        return left.is_set() or host.stopping.is_set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            return await anyio.to_thread.run_sync(answer, host.service, kind, raw, gone, limiter=limiter)
        except ClientGone:
            return None
        finally:
            tg.cancel_scope.cancel()


def build_app(host: Host) -> Starlette:
    limiter: list[anyio.CapacityLimiter] = []  # made on the event loop, at the first request

    async def endpoint(request: Request) -> Response:
        # h11 bounds only headers that arrive in pieces; ones that arrive in one read are checked here
        if sum(len(k) + len(v) + 4 for k, v in request.scope["headers"]) > MAX_HEADER_BYTES:
            return error_response(HEADERS_TOO_LARGE, close=True)
        method, what = request.method, route(request.method, request.url.path)
        if what == "health":
            return json_response(200, {"status": "ok"})
        err = check_bearer(host.api_key, request.headers.get("authorization"))
        if err is not None:
            return error_response(err, UNAUTHORIZED_HEADERS, close=True)
        if host.service is None and what in ("models", "chat", "completions"):
            return error_response(LOADING, {"Retry-After": "5"}, close=method == "POST")
        if method in ("GET", "HEAD"):
            if what == "models":
                return json_response(200, models_body(host.service.name))
            return error_response(*unrouted("GET", request.url.path))
        if method != "POST":
            err405, allow = unrouted(method, request.url.path)
            return error_response(err405, allow or {"Allow": "GET, POST"}, close=True)
        raw = await read_body(request, host.max_body_bytes)
        if isinstance(raw, ServiceError):
            return error_response(raw, close=True)
        if what is None:
            return error_response(*unrouted("POST", request.url.path))
        if not limiter:
            limiter.append(anyio.CapacityLimiter(max(1, host.max_connections)))
        reply = await run_answer(host, request, what, raw, limiter[0])
        if reply is None:  # the client is gone (this is never delivered) or the server is stopping
            return error_response(ServiceError(503, "the server is shutting down", "server_error"), close=True)
        if reply.events is not None:
            return Response(
                sse_body(reply.events), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
            )
        return json_response(reply.status, reply.body)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=METHODS)])
