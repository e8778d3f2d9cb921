"""Connection limits of the model servers (`ppt serve` on either transport, `ppt snd serve`), without HTTP.

Decided here once and applied by every transport (``http_stdlib`` and ``snd`` through ``capped``,
``http_uvicorn`` in its protocol):

- **a request deadline**: from the moment a connection is ready for a request (accepted, or its previous
  response sent) the whole request, request line, headers and body, must arrive within ``timeout_s``.
  Silence and slowness are cut alike: a client trickling a byte a second is closed at the deadline as
  surely as a silent one (issue 29, P-D2). The deadline does not run while a request is being answered.
- **caps on open connections**, in total and per client address. A connection over either is answered
  503 with ``Retry-After`` at once and closed, before any of its request is read, so a client that
  holds its slots (slowly, or without a bearer token) cannot take the slots of other addresses.
"""

from __future__ import annotations

import threading
from typing import Any

TOO_MANY = "too many connections"
TOO_MANY_FROM_CLIENT = "too many connections from this client"
RETRY_AFTER_S = 1


def client_key(address: Any) -> str:
    """The address a per-client cap counts: the peer's host (an IPv4-mapped IPv6 address as IPv4)."""
    host = address[0] if isinstance(address, (tuple, list)) and address else address
    host = str(host or "")
    return host.removeprefix("::ffff:") if host.startswith("::ffff:") and "." in host else host


def default_client_cap(max_connections: int, loopback: bool) -> int:
    """The per-client cap when none is given: every slot on a loopback server (its clients are all this
    machine), a quarter of them on one other machines can reach."""
    return max(1, max_connections if loopback else max_connections // 4)


class ConnectionLimits:
    """Open connections, counted in total and per client address (thread-safe).

    ``admit(client)`` takes a slot or says why not (the 503's message); ``release(client)`` gives it back.
    """

    def __init__(self, max_connections: int, max_per_client: int | None = None) -> None:
        self.max_connections = max(1, int(max_connections))
        per_client = self.max_connections if max_per_client is None else int(max_per_client)
        self.max_per_client = max(1, min(per_client, self.max_connections))
        self.refused = 0  # connections turned away at either cap
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}
        self._total = 0

    def admit(self, client: str) -> str | None:
        """None when a slot was taken for a connection from ``client``; else the reason it was refused."""
        with self._lock:
            if self._total >= self.max_connections:
                why = TOO_MANY
            elif self._open.get(client, 0) >= self.max_per_client:
                why = TOO_MANY_FROM_CLIENT
            else:
                self._total += 1
                self._open[client] = self._open.get(client, 0) + 1
                return None
            self.refused += 1
            return why

    def release(self, client: str) -> None:
        with self._lock:
            n = self._open.get(client, 0)
            if n <= 0:
                return
            self._total -= 1
            if n == 1:
                del self._open[client]
            else:
                self._open[client] = n - 1

    @property
    def open(self) -> int:
        with self._lock:
            return self._total


def refusal_response(body: bytes) -> bytes:
    """The whole HTTP response sent to a connection over a cap: 503, JSON ``body``, Retry-After, close."""
    return (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        b"Retry-After: " + str(RETRY_AFTER_S).encode() + b"\r\nConnection: close\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


__all__ = [
    "RETRY_AFTER_S",
    "TOO_MANY",
    "TOO_MANY_FROM_CLIENT",
    "ConnectionLimits",
    "client_key",
    "default_client_cap",
    "refusal_response",
]
