"""An OpenAI-compatible HTTP server over a local causal LM (`ppt serve`), standard library only.

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /v1/models``, ``GET /health``.
Requests that arrive together are generated together: a worker thread collects up to ``max_batch``
pending requests (waiting at most ``max_wait_s`` after the first) and runs them as one left-padded batch
per distinct set of sampling parameters. Each request's sampling uses its own generator (from its
``seed`` when given, else OS entropy), so batching never changes what a seeded request gets.

Request bodies are never logged. Meant for loopback use (tests, demos, offline pipelines): it has no
authentication, so bind 127.0.0.1 unless the network around it is trusted.
"""

from __future__ import annotations

import queue
import select
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from ppt.log import logger

MAX_BODY_BYTES = 8 << 20
REQUEST_TIMEOUT_S = 600.0


class ServiceError(Exception):
    """An error the server reports to the client as ``{"error": {...}}`` with an HTTP status."""

    def __init__(self, status: int, message: str, type: str = "invalid_request_error", code: str | None = None) -> None:  # noqa: A002
        super().__init__(message)
        self.status, self.message, self.type, self.code = status, message, type, code

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "code": self.code}}


class ClientGone(Exception):
    """The client disconnected before its answer was ready (nothing to send)."""


class Service:
    """What the HTTP layer calls: ``complete(body, kind, gone)`` -> ``{"text", "finish_reason", "usage"}``.

    ``gone()`` tells whether the client has disconnected, so work it no longer waits for can be dropped.
    """

    name = "model"

    def complete(self, body: dict, kind: str, gone: Callable[[], bool] | None = None) -> dict:  # pragma: no cover
        raise NotImplementedError

    def close(self) -> None:
        pass


class ModelService(Service):
    """Serve a ppt.lm.generate.LocalGenerator with dynamic batching (one worker thread owns the model)."""

    def __init__(self, generator: Any, name: str | None = None, *, max_batch: int = 8, max_wait_s: float = 0.01,
                 max_tokens_limit: int = 2048) -> None:
        self.generator = generator
        self.name = name or str(generator.name)
        self.max_batch, self.max_wait_s, self.max_tokens_limit = max(1, max_batch), max(0.0, max_wait_s), max_tokens_limit
        self.batches: list[int] = []  # sizes of the batches run (for tests and benchmarks)
        self.dropped = 0  # requests whose client left before they were generated
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._worker = threading.Thread(target=self._loop, name="ppt-serve-model", daemon=True)
        self._worker.start()

    def complete(self, body: dict, kind: str, gone: Callable[[], bool] | None = None) -> dict:
        from ppt.io import RecordError
        from ppt.remote.backends import parse_request

        try:
            req = parse_request(body, kind, max_tokens_limit=self.max_tokens_limit)
        except ValueError as e:
            raise ServiceError(400, str(e)) from None
        fut: Future = Future()
        self._queue.put((req, fut))
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while True:
            try:
                result = fut.result(timeout=0.25)
                break
            except TimeoutError:
                if gone is not None and gone() and fut.cancel():
                    self.dropped += 1  # a client that timed out and left: its request is never generated
                    raise ClientGone() from None
                if time.monotonic() > deadline:
                    raise ServiceError(503, "generation timed out", "server_error") from None

        if isinstance(result, RecordError):
            raise ServiceError(400, result.message, "invalid_request_error", result.type)
        return {"text": result.text, "finish_reason": result.finish_reason, "usage": result.usage}

    def _take_batch(self) -> list[tuple[Any, Future]]:
        try:
            first = self._queue.get(timeout=0.2)
        except queue.Empty:
            return []
        batch = [first]
        deadline = time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch:
            left = deadline - time.monotonic()
            try:
                batch.append(self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _loop(self) -> None:
        from ppt.remote.backends import run_local
        from ppt.rng import derive_seed, record_generator

        while not self._stop.is_set():
            batch = [(r, f) for r, f in self._take_batch() if f.set_running_or_notify_cancel()]
            if not batch:
                continue
            self.batches.append(len(batch))
            reqs = [r for r, _ in batch]
            gens = [record_generator(None if r.seed is None else derive_seed(r.seed, "serve"), 0) for r in reqs]
            try:
                results = run_local(self.generator, reqs, gens)
            except Exception as e:  # noqa: BLE001 - report to every waiting client, keep serving
                logger.warning(f"serve: generation failed ({type(e).__name__}: {str(e)[:200]})")
                err = ServiceError(500, "generation failed", "server_error")
                for _, fut in batch:
                    fut.set_exception(err)
                continue
            for (_, fut), res in zip(batch, results):
                fut.set_result(res)

    def close(self, timeout: float = 5.0) -> bool:
        """Stop the worker; True when it is still busy with a batch after ``timeout`` seconds."""
        self._stop.set()
        self._worker.join(timeout=timeout)
        return self._worker.is_alive()


class OpenAIHandler(BaseHTTPRequestHandler):
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

    def send_error_json(self, err: ServiceError) -> None:
        self.send_json(err.status, err.body())

    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            self.send_error_json(ServiceError(411, "send a Content-Length; chunked bodies are not supported"))
            return None
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self.send_error_json(ServiceError(413, f"body must be at most {MAX_BODY_BYTES} bytes"))
            return None
        return self.rfile.read(length)

    def _client_gone(self) -> bool:
        """True once the client has closed its side (it timed out or was killed)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    # -- routes
    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/health", "/v1/health"):
            self.send_json(200, {"status": "ok"})
        elif path == "/v1/models":
            svc = self.server.service
            self.send_json(200, {"object": "list", "data": [{"id": svc.name, "object": "model", "owned_by": "ppt"}]})
        else:
            self.send_error_json(ServiceError(404, f"no route GET {path}", "not_found"))

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        raw = self._read_body()
        if raw is None:
            return
        self.handle_post(self.path.split("?", 1)[0].rstrip("/"), raw)

    def handle_post(self, path: str, raw: bytes) -> None:
        kind = {"/v1/chat/completions": "chat", "/v1/completions": "completions"}.get(path)
        if kind is None:
            self.send_error_json(ServiceError(404, f"no route POST {path}", "not_found"))
            return
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self.send_error_json(ServiceError(400, "body is not valid JSON"))
            return
        if not isinstance(body, dict):
            self.send_error_json(ServiceError(400, "request body must be a JSON object"))
            return
        svc = self.server.service
        try:
            out = svc.complete(body, kind, gone=self._client_gone)
        except ClientGone:
            self.close_connection = True
            return
        except ServiceError as e:
            self.send_error_json(e)
            return
        except Exception as e:  # noqa: BLE001
            logger.warning(f"serve: request failed ({type(e).__name__})")
            self.send_error_json(ServiceError(500, "internal error", "server_error"))
            return
        self.send_json(200, _response(kind, svc.name, out))


def _response(kind: str, model: str, out: dict) -> dict:
    created = int(time.time())
    if kind == "chat":
        choice = {"index": 0, "message": {"role": "assistant", "content": out["text"]},
                  "finish_reason": out.get("finish_reason"), "logprobs": None}
        return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": created,
                "model": model, "choices": [choice], "usage": out.get("usage", {})}
    choice = {"index": 0, "text": out["text"], "finish_reason": out.get("finish_reason"), "logprobs": None}
    return {"id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion", "created": created,
            "model": model, "choices": [choice], "usage": out.get("usage", {})}


class OpenAIServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], service: Service | None,
                 verbose: bool = False) -> None:
        super().__init__(address, handler)
        self.service, self.verbose = service, verbose

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


def make_server(service: Service | None, host: str = "127.0.0.1", port: int = 8000,
                handler: type[BaseHTTPRequestHandler] = OpenAIHandler, verbose: bool = False) -> OpenAIServer:
    """Bind (port 0 = an ephemeral port; read it from ``server.server_address``) without serving yet."""
    cls = OpenAIServer
    if ":" in host:  # IPv6 literal
        cls = type("OpenAIServer6", (OpenAIServer,), {"address_family": socket.AF_INET6})
    return cls((host, port), handler, service, verbose)


def start_server(service: Service, host: str = "127.0.0.1", port: int = 0,
                 handler: type[BaseHTTPRequestHandler] = OpenAIHandler, verbose: bool = False
                 ) -> tuple[OpenAIServer, threading.Thread]:
    """Bind and serve in a daemon thread (tests, benchmarks); stop with ``server.shutdown()``."""
    server = make_server(service, host, port, handler, verbose)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
                              name="ppt-serve-http")
    thread.start()
    return server, thread
