"""The standard-library transport of `ppt serve` (``http.server``), used when uvicorn and starlette are
not installed. Hardened by hand: socket timeouts on every read and write, a connection cap answered 503
before any thread is started, bodies shorter than their Content-Length refused, chunked bodies refused
(411). Everything else (routes, auth, validation, reply bodies) comes from ``ppt.remote.api``.
"""

from __future__ import annotations

import select
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from ppt.log import logger
from ppt.remote.api import (
    LOADING,
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    NOT_FOUND,
    SHORT_BODY,
    SOCKET_TIMEOUT_S,
    UNAUTHORIZED_HEADERS,
    answer,
    check_bearer,
    declared_length,
    route,
)
from ppt.remote.service import ClientGone, Service, ServiceError
from ppt.remote.shapes import models_body, sse_body


class OpenAIHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive handler speaking the OpenAI JSON shapes. ``self.server`` is an OpenAIServer."""

    protocol_version = "HTTP/1.1"
    server_version = "ppt-serve"
    disable_nagle_algorithm = True  # small keep-alive responses must not wait for delayed ACKs (~40 ms)
    server: OpenAIServer

    # -- plumbing
    def setup(self) -> None:
        self.timeout = self.server.socket_timeout_s  # every read and write on this connection
        super().setup()

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
        raw = self.rfile.read(length)  # a stalled client times out (socket timeout)
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
            self.send_error_json(NOT_FOUND)

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
            self.send_error_json(NOT_FOUND)
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


class OpenAIServer(ThreadingHTTPServer):
    """One thread per connection, at most ``max_connections`` of them."""

    transport = "stdlib"
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], service: Service | None,
                 verbose: bool = False, *, api_key: str | None = None, socket_timeout_s: float = SOCKET_TIMEOUT_S,
                 max_connections: int = MAX_CONNECTIONS, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        super().__init__(address, handler)
        self.service, self.verbose, self.api_key = service, verbose, api_key
        self.socket_timeout_s, self.max_body_bytes = socket_timeout_s, max_body_bytes
        self.max_connections = max(1, max_connections)
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self.refused = 0  # connections turned away at the cap

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):  # at the cap: answer 503 at once, never queue a thread
            self.refused += 1
            body = orjson.dumps(ServiceError(503, "too many connections", "server_error").body())
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + str(len(body)).encode()
                                + b"\r\n\r\n" + body)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away is routine; anything else gets one line, not a traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        logger.warning(f"serve: error handling a request ({type(exc).__name__})")

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}/v1"


def make_stdlib_server(service: Service | None, host: str = "127.0.0.1", port: int = 8000,
                       handler: type[BaseHTTPRequestHandler] = OpenAIHandler, verbose: bool = False, **options: Any
                       ) -> OpenAIServer:
    """Bind (port 0 = an ephemeral port; read it from ``server.server_address``) without serving yet.
    ``options``: api_key, socket_timeout_s, max_connections, max_body_bytes (see OpenAIServer)."""
    cls = OpenAIServer
    if ":" in host:  # IPv6 literal
        cls = type("OpenAIServer6", (OpenAIServer,), {"address_family": socket.AF_INET6})
    return cls((host, port), handler, service, verbose, **options)
