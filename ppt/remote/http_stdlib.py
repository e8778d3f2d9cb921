"""The standard-library transport of `ppt serve` (``http.server``), used when uvicorn and starlette are
not installed. Hardened by hand: a deadline for each whole request (request line, headers and body)
and a timeout on every write, connection caps (in total and per client address) answered 503 before
any thread is started (both from ``ppt.remote.capped``), the bearer token checked before the body is
read, bodies shorter than their Content-Length refused, chunked bodies refused (411). Everything else (routes, auth, validation, reply bodies) comes from ``ppt.remote.api``.
"""

from __future__ import annotations

import select
import socket
import sys
from http.server import BaseHTTPRequestHandler
from typing import Any

import orjson

from ppt.log import logger
from ppt.remote.api import (
    LOADING,
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    SHORT_BODY,
    SOCKET_TIMEOUT_S,
    UNAUTHORIZED_HEADERS,
    answer,
    check_bearer,
    declared_length,
    over_capacity,
    route,
    unrouted,
)
from ppt.remote.capped import CappedThreadingServer, DeadlineRequestHandler
from ppt.remote.service import ClientGone, Service, ServiceError
from ppt.remote.shapes import models_body, sse_body


class OpenAIHandler(DeadlineRequestHandler):
    """HTTP/1.1 keep-alive handler speaking the OpenAI JSON shapes. ``self.server`` is an OpenAIServer."""

    protocol_version = "HTTP/1.1"
    server_version = "ppt-serve"
    disable_nagle_algorithm = True  # small keep-alive responses must not wait for delayed ACKs (~40 ms)
    server: OpenAIServer

    # -- plumbing
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature from the stdlib
        if self.server.verbose:  # request line and status only; bodies are never logged
            sys.stderr.write(f"ppt: serve: {self.address_string()} {format % args}\n")

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = orjson.dumps(obj)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self._headers_buffer.append(b"\r\n" + data)  # headers and body in one write
        self.flush_headers()

    def send_error_json(self, err: ServiceError, headers: dict[str, str] | None = None) -> None:
        self.send_json(err.status, err.body(), headers)

    def send_events(self, events: list[bytes]) -> None:
        """Server-sent events on a connection that closes after them (no length needed)."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(sse_body(events))
        self.wfile.flush()

    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            self.send_error_json(ServiceError(411, "send a Content-Length; chunked bodies are not supported"))
            return None
        length = declared_length(self.headers.get_all("Content-Length") or [], self.server.max_body_bytes)
        if length is None:
            self.close_connection = True
            self.send_error_json(ServiceError(411, "a POST needs a Content-Length"))
            return None
        if isinstance(length, ServiceError):
            self.close_connection = True
            self.send_error_json(length)
            return None
        raw = self.rfile.read(length)  # a slow or stalled client is cut at the request's deadline
        if len(raw) < length:  # the client closed its side early: never process a truncated body
            self.close_connection = True
            self.send_error_json(SHORT_BODY)
            return None
        return raw

    def _client_gone(self) -> bool:
        """True once the client has closed its side (it timed out or was killed)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _authorized(self) -> bool:
        err = check_bearer(self.server.api_key, self.headers.get("Authorization"))
        if err is None:
            return True
        self.close_connection = True  # an unread body must not be parsed as the next request
        self.send_error_json(err, UNAUTHORIZED_HEADERS)
        return False

    # -- routes
    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        what = route("GET", self.path)
        if what == "health":
            self.send_json(200, {"status": "ok"})
        elif not self._authorized():
            return
        elif what == "models" and self.server.service is None:
            self.send_error_json(LOADING, {"Retry-After": "5"})
        elif what == "models":
            self.send_json(200, models_body(self.server.service.name))
        else:
            self.send_error_json(*unrouted("GET", self.path))

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        if not self._authorized():
            return
        raw = self._read_body()
        if raw is None:
            return
        self.handle_post(self.path.split("?", 1)[0].rstrip("/"), raw)

    def handle_post(self, path: str, raw: bytes) -> None:
        kind = route("POST", path)
        if kind is None:
            self.send_error_json(*unrouted("POST", path))
            return
        if self.server.service is None:
            self.send_error_json(LOADING, {"Retry-After": "5"})
            return
        try:
            reply = answer(self.server.service, kind, raw, gone=self._client_gone)
        except ClientGone:
            self.close_connection = True
            return
        if reply.events is not None:
            self.send_events(reply.events)
        else:
            self.send_json(reply.status, reply.body)


class OpenAIServer(CappedThreadingServer):
    """One thread per connection, at most ``max_connections`` of them and ``max_client_connections`` from
    one client address; a JSON 503 over either cap."""

    transport = "stdlib"
    request_queue_size = 128
    url_suffix = "/v1"

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        service: Service | None,
        verbose: bool = False,
        *,
        api_key: str | None = None,
        socket_timeout_s: float = SOCKET_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        max_client_connections: int | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        super().__init__(address, handler, max_connections, max_client_connections)
        self.service, self.verbose, self.api_key = service, verbose, api_key
        self.socket_timeout_s, self.max_body_bytes = socket_timeout_s, max_body_bytes

    def refusal(self, why: str) -> bytes:
        return over_capacity(why)

    def report_error(self, exc_name: str) -> None:
        logger.warning(f"serve: error handling a request ({exc_name})")


def make_stdlib_server(
    service: Service | None,
    host: str = "127.0.0.1",
    port: int = 8000,
    handler: type[BaseHTTPRequestHandler] = OpenAIHandler,
    verbose: bool = False,
    **options: Any,
) -> OpenAIServer:
    """Bind (port 0 = an ephemeral port; read it from ``server.server_address``) without serving yet.
    ``options``: api_key, socket_timeout_s, max_connections, max_client_connections, max_body_bytes
    (see OpenAIServer)."""
    cls = OpenAIServer
    if ":" in host:  # IPv6 literal
        cls = type("OpenAIServer6", (OpenAIServer,), {"address_family": socket.AF_INET6})
    return cls((host, port), handler, service, verbose, **options)
