"""A loopback OpenAI-compatible server with scripted faults (429, 500, dropped connections, slow
responses) for client tests and benchmarks, on either transport of ``ppt.remote.server``.

Nothing in the production path imports this module; `ppt serve` uses ``ppt.remote.server`` directly.
Fault injection lives here, as a handler subclass (stdlib) or an ASGI middleware (starlette), so the
real server stays free of test hooks.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ppt.remote.http_stdlib import OpenAIHandler
from ppt.remote.server import Service, pick_transport, start_server

# ---------------------------------------------------------------------- fault injection


@dataclass
class Fault:
    """One scripted misbehaviour: ``status`` (e.g. 429, 500) with optional Retry-After seconds, ``drop``
    (close the connection without a response) or ``delay_s`` before answering normally."""

    status: int | None = None
    retry_after: float | None = None
    drop: bool = False
    delay_s: float = 0.0


@dataclass
class FaultPlan:
    """Faults applied to requests in arrival order (then none); thread-safe; counts what happened."""

    script: list[Fault | None] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: int = 0
    injected: collections.Counter = field(default_factory=collections.Counter)
    headers: list[dict] = field(default_factory=list)

    def next(self) -> Fault | None:
        with self.lock:
            self.seen += 1
            return self.script.pop(0) if self.script else None

    def extend(self, faults: Iterable[Fault | None]) -> None:
        with self.lock:
            self.script.extend(faults)

    def take(self, headers: dict[str, str]) -> Fault | None:
        """Record a POST's headers and return the fault to apply to it, counting what it does."""
        with self.lock:
            self.headers.append(headers)
        fault = self.next()
        if fault is not None:
            with self.lock:
                for what, on in (("delay", fault.delay_s), ("drop", fault.drop)):
                    if on:
                        self.injected[what] += 1
                if not fault.drop and fault.status is not None:
                    self.injected[str(fault.status)] += 1
        return fault


def fault_reply(fault: Fault) -> tuple[int, dict, dict[str, str]]:
    headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
    return (
        fault.status or 500,
        {"error": {"message": "injected fault", "type": "injected", "code": str(fault.status)}},
        headers,
    )


class FaultyHandler(OpenAIHandler):
    """OpenAIHandler that consults ``server.faults`` (a FaultPlan) before answering each POST."""

    def handle_post(self, path: str, raw: bytes) -> None:
        plan: FaultPlan | None = getattr(self.server, "faults", None)
        if plan is not None and self._inject(plan):
            return
        super().handle_post(path, raw)

    def _inject(self, plan: FaultPlan) -> bool:
        """Apply the next scripted fault; True when it replaced the normal response."""
        fault = plan.take({k.lower(): v for k, v in self.headers.items()})
        if fault is None:
            return False
        if fault.delay_s:
            time.sleep(fault.delay_s)
        if fault.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return True
        if fault.status is not None:
            self.send_json(*fault_reply(fault))
            return True
        return False


class FaultMiddleware:
    """The starlette transport's FaultyHandler: an ASGI middleware consulting ``server.faults``."""

    def __init__(self, app: Any, server: Any) -> None:
        self.app, self.server = app, server

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        plan: FaultPlan | None = getattr(self.server, "faults", None)
        if plan is None or scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        import anyio

        from ppt.remote.http_uvicorn import CLOSE_KEY

        fault = plan.take({k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]})
        if fault is not None and fault.delay_s:
            await anyio.sleep(fault.delay_s)
        if fault is not None and fault.drop:
            scope["state"][CLOSE_KEY]()
            while (await receive())["type"] != "http.disconnect":  # returns once the connection is closed
                pass
            return None
        if fault is not None and fault.status is not None:
            status, body, headers = fault_reply(fault)
            data = orjson.dumps(body)
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(data)).encode()),
                        *((k.lower().encode(), v.encode()) for k, v in headers.items()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": data})
            return None
        return await self.app(scope, receive, send)


@contextlib.contextmanager
def loopback(
    service: Service, faults: FaultPlan | None = None, *, transport: str = "auto", **kwargs: Any
) -> Iterator[tuple[Any, str]]:
    """Serve ``service`` on 127.0.0.1 with an ephemeral port in a thread; yield (server, base_url).
    ``transport``: ``starlette``, ``stdlib`` or ``auto`` (starlette when installed, as `ppt serve`)."""
    name = pick_transport(transport)
    hook = {"wrap_app": FaultMiddleware} if name == "starlette" else {"handler": FaultyHandler}
    server, thread = start_server(service, host="127.0.0.1", port=0, transport=name, **hook, **kwargs)
    server.faults = faults  # type: ignore[attr-defined]
    try:
        yield server, server.base_url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
