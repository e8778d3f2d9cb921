"""A loopback OpenAI-compatible server with scripted faults (429, 500, dropped connections, slow
responses) for client tests and benchmarks.

Nothing in the production path imports this module; `ppt serve` uses ``ppt.remote.server`` directly.
Fault injection lives here, as a handler subclass, so the real server stays free of test hooks.
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

from ppt.remote.server import OpenAIHandler, OpenAIServer, Service, start_server

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


class FaultyHandler(OpenAIHandler):
    """OpenAIHandler that consults ``server.faults`` (a FaultPlan) before answering each POST."""

    def handle_post(self, path: str, raw: bytes) -> None:
        plan: FaultPlan | None = getattr(self.server, "faults", None)
        if plan is not None and self._inject(plan):
            return
        super().handle_post(path, raw)

    def _inject(self, plan: FaultPlan) -> bool:
        """Apply the next scripted fault; True when it replaced the normal response."""
        with plan.lock:
            plan.headers.append({k.lower(): v for k, v in self.headers.items()})
        fault = plan.next()
        if fault is None:
            return False
        if fault.delay_s:
            with plan.lock:
                plan.injected["delay"] += 1
            time.sleep(fault.delay_s)
        if fault.drop:
            with plan.lock:
                plan.injected["drop"] += 1
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return True
        if fault.status is not None:
            with plan.lock:
                plan.injected[str(fault.status)] += 1
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            self.send_json(fault.status, {"error": {"message": "injected fault", "type": "injected",
                                                     "code": str(fault.status)}}, headers)
            return True
        return False


@contextlib.contextmanager
def loopback(service: Service, faults: FaultPlan | None = None, **kwargs: Any) -> Iterator[tuple[OpenAIServer, str]]:
    """Serve ``service`` on 127.0.0.1 with an ephemeral port in a thread; yield (server, base_url)."""
    server, thread = start_server(service, host="127.0.0.1", port=0, handler=FaultyHandler, **kwargs)
    server.faults = faults  # type: ignore[attr-defined]
    try:
        yield server, server.base_url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
