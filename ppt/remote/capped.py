"""A threaded stdlib HTTP server with a hard connection cap, for `ppt serve`'s fallback and `ppt snd serve`.

Why one class: both servers must refuse the connection over the cap at once (a 503, never a queued
thread), release their slot whatever the handler does, and log a failed request as one line without
a traceback; they differ only in the refusal's body and where the line goes.
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EMPTY_503 = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


class CappedThreadingServer(ThreadingHTTPServer):
    """One thread per connection, at most ``max_connections`` of them; ``url_suffix`` ends ``base_url``."""

    daemon_threads = True
    allow_reuse_address = True
    url_suffix = ""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], max_connections: int) -> None:
        super().__init__(address, handler)
        self.max_connections = max(1, max_connections)
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self.refused = 0  # connections turned away at the cap

    def refusal(self) -> bytes:
        """The whole response sent to a connection over the cap."""
        return EMPTY_503

    def report_error(self, exc_name: str) -> None:
        """One line for a request that failed for another reason than the client going away."""
        sys.stderr.write(f"ppt: serve: error handling a request ({exc_name})\n")

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):  # at the cap: answer 503 at once, never queue a thread
            self.refused += 1
            try:
                request.settimeout(1.0)
                request.sendall(self.refusal())
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
        self.report_error(type(exc).__name__)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}{self.url_suffix}"


__all__ = ["CappedThreadingServer", "EMPTY_503"]
