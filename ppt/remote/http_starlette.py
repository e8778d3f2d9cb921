"""The starlette application of `ppt serve`'s preferred transport (served by ``ppt.remote.http_uvicorn``).

Every request, whatever its method or path, goes to one endpoint that asks ``ppt.remote.framing`` what its
request line and headers decide (framing, routes, auth, body size) and ``ppt.remote.api`` what to answer
its body, so statuses and reply bodies are the stdlib transport's. What is the app's own: reading the
body, limited again as it streams in, and the blocking model call, run in a worker thread (never on the
event loop) while a watcher task notices a client that disconnects, so its queued request is dropped
instead of generated. Worker threads are capped at ``max_connections``.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import anyio
import anyio.to_thread
import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from ppt.remote.api import LOADING, Reply, answer
from ppt.remote.framing import SHORT_BODY, decide_head, too_large
from ppt.remote.service import ClientGone, Service, ServiceError
from ppt.remote.shapes import models_body, sse_body


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
    """The whole body, or the error to answer: more than ``max_bytes`` (413), or a client that closed
    before the end (400; nobody reads it)."""
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:  # h11 holds the body to its Content-Length, which is at most this
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


def request_head(scope: dict) -> tuple[str, str, str, list[tuple[str, str]]]:
    """Method, raw target (with its query), HTTP version and headers, as ``framing.decide_head`` takes them."""
    target = scope["raw_path"].decode("latin-1")
    if scope.get("query_string"):
        target += "?" + scope["query_string"].decode("latin-1")
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
    return scope["method"], target, scope["http_version"], headers


def build_app(host: Host) -> Any:
    """The ASGI app: every method and path to one endpoint (no router, whose own 404/405 pages differ)."""
    limiter: list[anyio.CapacityLimiter] = []  # made on the event loop, at the first request

    async def endpoint(request: Request) -> Response:
        method, target, version, headers = request_head(request.scope)
        head = decide_head(
            method,
            target,
            version,
            headers,
            api_key=host.api_key,
            loading=host.service is None,
            max_body_bytes=host.max_body_bytes,
        )
        if head.error is not None:
            return error_response(head.error, head.headers, close=head.close)
        if head.kind == "health":
            return json_response(200, {"status": "ok"})
        if head.kind == "models":
            return json_response(200, models_body(host.service.name))
        raw = await read_body(request, host.max_body_bytes)
        if isinstance(raw, ServiceError):
            return error_response(raw, close=True)
        if host.service is None:  # set by now unless a request raced the model's load
            return error_response(LOADING, {"Retry-After": "5"}, close=True)
        if not limiter:
            limiter.append(anyio.CapacityLimiter(max(1, host.max_connections)))
        reply = await run_answer(host, request, head.kind, raw, limiter[0])
        if reply is None:  # the client is gone (this is never delivered) or the server is stopping
            return error_response(ServiceError(503, "the server is shutting down", "server_error"), close=True)
        if reply.events is not None:
            return Response(
                sse_body(reply.events), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
            )
        return json_response(reply.status, reply.body)

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan is off and websockets are not served
            return
        response = await endpoint(Request(scope, receive))
        await response(scope, receive, send)

    return app
