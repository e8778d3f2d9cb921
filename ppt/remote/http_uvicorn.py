"""The preferred transport of `ppt serve`: the starlette app (``ppt.remote.http_starlette``) served by
uvicorn's h11 protocol, which brings HTTP/1.1 parsing, keep-alive, pipelining and header size limits
from a maintained server. Installed with ``pip install 'ppt-private-prompts[serve]'``; without it the stdlib transport
runs instead.

How `ppt serve`'s limits map onto uvicorn (``ppt.remote.limits`` decides them for both transports):
``--timeout`` is a deadline for each whole request, kept here by ``TimedH11Protocol`` (uvicorn arms no
timer before a request's first response, and its keep-alive timer is re-armed by every byte, so a client
that sends nothing, or trickles its headers or body, would hold a connection forever); it is also
``timeout_keep_alive``. ``--max-connections`` and ``--max-client-connections`` are counted by the
protocol as connections open, and one over either cap is answered the stdlib transport's JSON 503 at
once (uvicorn's own ``limit_concurrency`` is not used: it answers text/plain, without Retry-After);
headers are capped by ``h11_max_incomplete_event_size``; the body limit is the app's. The socket is
bound by ``UvicornServer()`` itself, so a taken port fails before the model loads, as with the stdlib
transport.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import h11
import orjson
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ppt.remote.api import MAX_BODY_BYTES, MAX_CONNECTIONS, MAX_HEADER_BYTES, SOCKET_TIMEOUT_S, over_capacity
from ppt.remote.framing import h11_error, without_query
from ppt.remote.http_starlette import build_app
from ppt.remote.limits import ConnectionLimits, client_key
from ppt.remote.service import Service

SHUTDOWN_GRACE_S = 5.0  # in-flight requests get this long to finish once a stop is asked for
CLOSE_KEY = "ppt.close_connection"  # in scope["state"]: closes this request's connection without a reply


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol plus the request deadline and the connection caps of ``ppt.remote.limits``.

    The deadline: ``timeout_keep_alive`` seconds after the connection is ready for a request (made, or
    its previous response sent) the request must be in whole (its first byte, headers and body), or the
    connection is closed. It is armed once per request, never re-armed by the bytes that arrive, and not
    running while a request is answered (generation has its own limit). ``limits`` (set per server by
    ``UvicornServer``) counts open connections; one over a cap gets ``over_capacity`` and is closed."""

    limits: ConnectionLimits | None = None
    _read_timer: Any = None
    _refused = False
    _client_key = ""
    _short_body = False

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        if self.limits is not None:
            self._client_key = client_key(transport.get_extra_info("peername"))
            why = self.limits.admit(self._client_key)
            if why is not None:  # over a cap: the 503 at once, before any of the request is read
                self._refused = True
                transport.write(over_capacity(why))
                transport.close()
                return
        super().connection_made(transport)
        self.app_state = {**self.app_state, CLOSE_KEY: self._close}
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._reading():  # the request is in: the deadline stops while it is answered
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start a pipelined request already received
        if self.transport.is_closing() or not self._reading():
            self._disarm()
        else:  # ready for the next request: its deadline starts now
            self._arm()

    def eof_received(self) -> None:
        """The client closed its sending side. Mid-request, tell h11 so it refuses the incomplete
        message with a 400 (as the stdlib transport does) instead of the app seeing a silent disconnect."""
        conn = self.conn
        pending = conn.their_state is h11.SEND_BODY or (conn.their_state is h11.IDLE and bool(conn.trailing_data[0]))
        if pending and conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self._short_body = conn.their_state is h11.SEND_BODY
            conn.receive_data(b"")
            self.handle_events()  # h11 raises RemoteProtocolError: send_400_response answers and closes

    def send_400_response(self, msg: str) -> None:  # noqa: ARG002 - uvicorn's text is replaced
        """uvicorn's answer to a request h11 cannot parse (a text/plain 400), replaced by the stdlib
        transport's JSON answer to the same bytes (``framing.h11_error``). Called while the h11 error
        is being handled, so it is at hand."""
        exc = sys.exc_info()[1]
        hint = getattr(exc, "error_status_hint", 400)
        err = h11_error(hint, self.conn.trailing_data[0], self._short_body)
        data = orjson.dumps(err.body())
        head = (
            f"HTTP/1.1 {err.status} {_reason(err.status)}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode("latin-1") + data)
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        if self.limits is not None:
            self.limits.release(self._client_key)
        self._disarm()
        super().connection_lost(exc)

    def _reading(self) -> bool:
        cycle = self.cycle
        return cycle is None or cycle.response_complete or cycle.more_body

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._read_timer = self.loop.call_later(self.timeout_keep_alive, self._close)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _close(self) -> None:
        if not self.transport.is_closing():
            try:
                self.conn.send(h11.ConnectionClosed())
            except h11.LocalProtocolError:
                pass  # mid-message: closing is all that is left
            self.transport.close()


class _StoppableServer(uvicorn.Server):
    """Tells requests waiting on the model that the server is stopping (SIGINT/SIGTERM or shutdown()),
    so their worker threads return and the graceful shutdown does not wait on generation."""

    def __init__(self, config: uvicorn.Config, stopping: threading.Event) -> None:
        super().__init__(config)
        self.stopping = stopping

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.stopping.set()
        super().handle_exit(sig, frame)


class _OneLine(logging.Handler):
    """uvicorn's messages as ``ppt: serve: ...`` lines, never a traceback (which could quote a request)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind = "warning: " if record.levelno >= logging.WARNING else ""
            sys.stderr.write(f"ppt: {kind}serve: {without_query(record.getMessage())}\n")
        except Exception:  # noqa: BLE001 - a closed stderr must not stop the server
            pass


_HANDLER = _OneLine()


def _route_logs(verbose: bool) -> None:
    err = logging.getLogger("uvicorn.error")
    err.handlers, err.propagate = [_HANDLER], False
    err.setLevel(logging.WARNING)
    access = logging.getLogger("uvicorn.access")  # request line and status only; bodies are never logged
    access.handlers, access.propagate = ([_HANDLER] if verbose else []), False
    access.setLevel(logging.INFO)


def bind(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A listening socket (IPv6 for an address with a colon); OSError when the address is taken.
    Made with proto IPPROTO_TCP: asyncio sets TCP_NODELAY only on such sockets' connections, and
    without it every small keep-alive reply waits for a delayed ACK (~40 ms)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock


class UvicornServer:
    """The same surface as the stdlib OpenAIServer (``service``, ``server_address``, ``base_url``,
    ``serve_forever``, ``shutdown``, ``server_close``), so `ppt serve`, tests and benchmarks drive
    either transport alike. ``wrap_app(app, server)`` wraps the ASGI app (fault injection in tests)."""

    transport = "starlette"

    def __init__(
        self,
        service: Service | None,
        host: str = "127.0.0.1",
        port: int = 8000,
        verbose: bool = False,
        *,
        api_key: str | None = None,
        socket_timeout_s: float = SOCKET_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        max_client_connections: int | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        shutdown_grace_s: float = SHUTDOWN_GRACE_S,
        wrap_app: Callable[[Any, UvicornServer], Any] | None = None,
    ) -> None:
        self.service, self.verbose, self.api_key = service, verbose, api_key
        self.limits = ConnectionLimits(max_connections, max_client_connections)
        self.max_connections, self.max_body_bytes = self.limits.max_connections, max_body_bytes
        self.stopping = threading.Event()
        self.socket = bind(host, port)
        self.server_address = self.socket.getsockname()
        app = build_app(self)
        if wrap_app is not None:
            app = wrap_app(app, self)
        config = uvicorn.Config(
            app,
            http=type("TimedH11Protocol", (TimedH11Protocol,), {"limits": self.limits}),
            ws="none",
            lifespan="off",
            loop="asyncio",
            interface="asgi3",
            log_config=None,
            access_log=verbose,
            proxy_headers=False,
            server_header=False,
            timeout_keep_alive=socket_timeout_s,  # type: ignore[arg-type] - a float works (call_later)
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            timeout_graceful_shutdown=shutdown_grace_s,  # type: ignore[arg-type]
        )
        _route_logs(verbose)
        self._server = _StoppableServer(config, self.stopping)
        self._serving: threading.Thread | None = None
        self._done = threading.Event()
        self._grace = shutdown_grace_s

    def serve_forever(self, poll_interval: float | None = None) -> None:  # noqa: ARG002 - stdlib's signature
        """Serve until shutdown() or, in the main thread, SIGINT/SIGTERM (uvicorn re-raises the signal
        once it has stopped: callers see KeyboardInterrupt, or their own SIGTERM handler run)."""
        self._serving = threading.current_thread()
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self._done.set()

    def shutdown(self) -> None:
        """Stop serving; from another thread, wait until in-flight requests are answered or cut off."""
        self.stopping.set()
        self._server.should_exit = True
        if self._serving is not None and self._serving is not threading.current_thread():
            self._done.wait(timeout=self._grace + 10)

    def server_close(self) -> None:
        self.socket.close()

    @property
    def refused(self) -> int:
        """Connections turned away at a cap."""
        return self.limits.refused

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}/v1"
