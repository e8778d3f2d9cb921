"""The standard-library transport of `ppt serve` (``http.server``), used when uvicorn and starlette are
not installed. Hardened by hand: a deadline for each whole request (request line, headers and body)
and a timeout on every write, connection caps (in total and per client address) answered 503 before
any thread is started (both from ``ppt.remote.capped``), the bearer token checked before the body is
read, bodies shorter than their Content-Length refused. What the request line and headers decide
(framing, routes, auth, body size) comes from ``ppt.remote.framing``, http.server's own parse errors
are answered as ``framing.protocol_error`` says, and the answers to bodies come from ``ppt.remote.api``,
so the uvicorn transport answers the same bytes the same way.
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
    SOCKET_TIMEOUT_S,
    answer,
    over_capacity,
    route,
    unrouted,
)
from ppt.remote.capped import CappedThreadingServer, DeadlineRequestHandler
from ppt.remote.framing import SHORT_BODY, decide_head, protocol_error, without_query
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
            sys.stderr.write(f"ppt: serve: {self.address_string()} {without_query(format % args)}\n")

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = orjson.dumps(obj)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self._headers_buffer.append(b"\r\n" + (b"" if self.command == "HEAD" else data))  # one write
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

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:  # noqa: ARG002
        """http.server's own error pages (HTML) for what it cannot parse, replaced by the JSON answer the
        uvicorn transport gives the same bytes (``framing.protocol_error``)."""
        if self.request_version == "HTTP/0.9":  # so the status line is written
            self.request_version = self.protocol_version
        self.close_connection = True
        self.send_error_json(protocol_error(code))

    def handle_expect_100(self) -> bool:
        """``Expect: 100-continue`` is answered once the headers are accepted (``_read_body``), as uvicorn
        does: a client refused (401, 413, ...) never sends its body."""
        return True

    def parse_request(self) -> bool:
        """http.server's parse, then the request line and headers through ``framing.decide_head``."""
        if not super().parse_request():
            return False
        words = self.requestline.split()
        if self.request_version == "HTTP/0.9" or not self.raw_requestline.endswith(b"\n") or self.headers.defects:
            self.send_error(400)  # HTTP/0.9, a request line cut short by the end of the stream, a bad header line
            return False
        self.raw_target = words[1]
        self.head = decide_head(
            self.command,
            self.raw_target,
            self.request_version.removeprefix("HTTP/"),
            self.headers.items(),
            api_key=self.server.api_key,
            loading=self.server.service is None,
            max_body_bytes=self.server.max_body_bytes,
        )
        return True

    def _read_body(self, length: int) -> bytes | None:
        if self.headers.get("Expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
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

    # -- every method: what the request line and headers decided, then the body
    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):  # http.server looks up do_<METHOD>: all go to one place (no 501 pages)
            return self._serve
        raise AttributeError(name)

    def _serve(self) -> None:
        head = self.head
        if head.error is not None:
            self.close_connection = self.close_connection or head.close
            self.send_error_json(head.error, head.headers)
        elif head.kind == "health":
            self.send_json(200, {"status": "ok"})
        elif head.kind == "models":
            self.send_json(200, models_body(self.server.service.name))
        else:
            raw = self._read_body(head.length)
            if raw is not None:
                self.handle_post(self.raw_target.split("?", 1)[0].rstrip("/"), raw)

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
