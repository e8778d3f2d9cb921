"""A threaded stdlib HTTP server with hard connection caps and a request deadline, for `ppt serve`'s
fallback and `ppt snd serve`.

Why one class: both servers must refuse the connection over a cap (in total or from one client
address, ``ppt.remote.limits``) at once (a 503, never a queued thread), release their slot whatever
the handler does, cut a request that has not arrived whole by its deadline, and log a failed request
as one line without a traceback; they differ only in the refusal's body and where the line goes.

The deadline (``DeadlineRequestHandler``): ``socket_timeout_s`` after a connection is ready for a
request, the request line, headers and body must all be in. Every read of the request goes through a
reader that sets the socket's timeout to what is left of the deadline, so a client trickling a byte
at a time is cut at the deadline, not re-armed by each byte; writes keep the plain timeout.
"""

from __future__ import annotations

import io
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ppt.remote.limits import ConnectionLimits, client_key, refusal_response


class _DeadlineReader(io.RawIOBase):
    """The raw side of a handler's ``rfile``: each read waits at most until the handler's deadline."""

    def __init__(self, sock: socket.socket, handler: DeadlineRequestHandler) -> None:
        super().__init__()
        self._sock, self._handler = sock, handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._handler.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive whole before its deadline")
        idle = self._sock.gettimeout()
        self._sock.settimeout(left if idle is None else min(left, idle))
        try:
            return self._sock.recv_into(buffer)
        finally:
            self._sock.settimeout(idle)


class DeadlineRequestHandler(BaseHTTPRequestHandler):
    """A handler whose requests must arrive whole within ``server.socket_timeout_s`` of the connection
    being ready for them (accepted, or the previous response sent). A timeout closes the connection
    (``BaseHTTPRequestHandler.handle_one_request`` catches TimeoutError). Writes time out after
    ``socket_timeout_s`` of no progress."""

    deadline = float("inf")

    def setup(self) -> None:
        self.timeout = self.server.socket_timeout_s  # type: ignore[attr-defined] - writes, and the cap per read
        super().setup()
        self.rfile.close()  # the plain socket reader setup() made, replaced by one that keeps the deadline
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))

    def handle_one_request(self) -> None:
        self.deadline = time.monotonic() + self.server.socket_timeout_s  # type: ignore[attr-defined]
        super().handle_one_request()


class CappedThreadingServer(ThreadingHTTPServer):
    """One thread per connection, at most ``max_connections`` of them and ``max_client_connections``
    from one client address (default: no per-client limit below the total); ``url_suffix`` ends
    ``base_url``."""

    daemon_threads = True
    allow_reuse_address = True
    url_suffix = ""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        max_connections: int,
        max_client_connections: int | None = None,
    ) -> None:
        super().__init__(address, handler)
        self.limits = ConnectionLimits(max_connections, max_client_connections)
        self.max_connections = self.limits.max_connections

    @property
    def refused(self) -> int:
        """Connections turned away at a cap."""
        return self.limits.refused

    def refusal(self, why: str) -> bytes:
        """The whole response sent to a connection over a cap (``why``: the reason, for its body)."""
        return refusal_response(b'{"error":{"message":"' + why.encode() + b'"}}')

    def report_error(self, exc_name: str) -> None:
        """One line for a request that failed for another reason than the client going away."""
        sys.stderr.write(f"ppt: serve: error handling a request ({exc_name})\n")

    def process_request(self, request: Any, client_address: Any) -> None:
        client = client_key(client_address)
        why = self.limits.admit(client)
        if why is not None:  # over a cap: answer 503 at once, never queue a thread
            try:
                request.settimeout(1.0)
                request.sendall(self.refusal(why))
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.limits.release(client)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.limits.release(client_key(client_address))

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away is routine; anything else gets one line, not a traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        self.report_error(type(exc).__name__)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}{self.url_suffix}"


__all__ = ["CappedThreadingServer", "DeadlineRequestHandler"]
