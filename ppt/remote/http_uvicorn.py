"""The preferred transport of `ppt serve`: the starlette app (``ppt.remote.http_starlette``) served by
uvicorn's h11 protocol, which brings HTTP/1.1 parsing, keep-alive, pipelining and header size limits
from a maintained server. Installed with ``pip install 'ppt[serve]'``; without it the stdlib transport
runs instead.

How `ppt serve`'s limits map onto uvicorn: ``--timeout`` is ``timeout_keep_alive`` plus a read timeout
added here (uvicorn arms no timer before a request's first response, so a client that sends nothing,
or headers or a body slowly, would hold a connection forever); ``--max-connections`` is
``limit_concurrency`` (503 beyond it); headers are capped by ``h11_max_incomplete_event_size``; the body
limit is the app's. The socket is bound by ``UvicornServer()`` itself, so a taken port fails before
the model loads, as with the stdlib transport.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ppt.remote.api import MAX_BODY_BYTES, MAX_CONNECTIONS, MAX_HEADER_BYTES, SOCKET_TIMEOUT_S
from ppt.remote.http_starlette import build_app
from ppt.remote.service import Service

SHUTDOWN_GRACE_S = 5.0  # in-flight requests get this long to finish once a stop is asked for
CLOSE_KEY = "ppt.close_connection"  # in scope["state"]: closes this request's connection without a reply


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a read timeout: ``timeout_keep_alive`` seconds of silence while a
    request is incomplete (before its first byte, in its headers or its body) close the connection.
    A request being answered is never timed out here (generation has its own limit)."""

    _read_timer: Any = None

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.app_state = {**self.app_state, CLOSE_KEY: self._close}
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._reading():
            self._arm()
        else:
            self._disarm()

    def eof_received(self) -> None:
        """The client closed its sending side. Mid-request, tell h11 so it refuses the incomplete
        message with a 400 (as the stdlib transport does) instead of the app seeing a silent disconnect."""
        conn = self.conn
        pending = conn.their_state is h11.SEND_BODY or (conn.their_state is h11.IDLE and bool(conn.trailing_data[0]))
        if pending and conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            conn.receive_data(b"")
            self.handle_events()  # h11 raises RemoteProtocolError: uvicorn answers 400 and closes

    def connection_lost(self, exc: Exception | None) -> None:
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
            sys.stderr.write(f"ppt: {kind}serve: {record.getMessage()}\n")
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
        max_body_bytes: int = MAX_BODY_BYTES,
        shutdown_grace_s: float = SHUTDOWN_GRACE_S,
        wrap_app: Callable[[Any, UvicornServer], Any] | None = None,
    ) -> None:
        self.service, self.verbose, self.api_key = service, verbose, api_key
        self.max_connections, self.max_body_bytes = max(1, max_connections), max_body_bytes
        self.stopping = threading.Event()
        self.socket = bind(host, port)
        self.server_address = self.socket.getsockname()
        app = build_app(self)
        if wrap_app is not None:
            app = wrap_app(app, self)
        config = uvicorn.Config(
            app,
            http=TimedH11Protocol,
            ws="none",
            lifespan="off",
            loop="asyncio",
            interface="asgi3",
            log_config=None,
            access_log=verbose,
            proxy_headers=False,
            server_header=False,
            timeout_keep_alive=socket_timeout_s,  # type: ignore[arg-type] - a float works (call_later)
            limit_concurrency=self.max_connections + 1,  # uvicorn counts the connection asking: 503 at cap + 1
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
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}/v1"
