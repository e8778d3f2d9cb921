"""An OpenAI-compatible HTTP server over a local causal LM (`ppt serve`), standard library only.

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /v1/models``, ``GET /health``.
Requests that arrive together are generated together: a worker thread collects up to ``max_batch``
pending requests (waiting at most ``max_wait_s`` after the first) and runs them as one left-padded batch
per distinct set of sampling parameters. Each request's sampling uses its own generator (from its
``seed`` when given, else OS entropy), so batching never changes what a seeded request gets.

Every request parameter is honoured or refused (HTTP 400), never ignored: ``n`` up to 8 choices,
``logprobs`` (completions: ``logprobs=k``; chat: ``logprobs``/``top_logprobs``) computed by the model over
the returned text as its tokenizer splits it, and ``stream=true`` answered as server-sent events (the
text of each choice arrives in one chunk once generated: batching, not token-by-token streaming).

Hardening: a bearer token when ``api_key`` is set (``ppt serve`` requires one for non-loopback
addresses), socket timeouts, a cap on open connections (503 beyond it), bodies shorter than their
Content-Length refused, strict request validation (unknown roles and parameters refused). Request
bodies and keys are never logged.
"""

from __future__ import annotations

import hmac
import queue
import select
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from ppt.log import logger

MAX_BODY_BYTES = 8 << 20
REQUEST_TIMEOUT_S = 600.0
SOCKET_TIMEOUT_S = 30.0  # idle keep-alive, slow headers, slow bodies
MAX_CONNECTIONS = 64


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
    # what complete() serves beyond one plain answer ("n", "logprobs"); the HTTP layer refuses the rest.
    # complete() returns {"text", "finish_reason", "usage"} or {"choices": [{"text", "finish_reason",
    # "logprobs"}], "usage"}, where logprobs is None or [(token, logprob, [(token, logprob), ...]), ...].
    features: frozenset[str] = frozenset()

    def complete(self, body: dict, kind: str, gone: Callable[[], bool] | None = None) -> dict:  # pragma: no cover
        raise NotImplementedError

    def close(self) -> None:
        pass


class ModelService(Service):
    """Serve a ppt.lm.generate.LocalGenerator with dynamic batching (one worker thread owns the model)."""

    features = frozenset({"n", "logprobs"})

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
            req = parse_request(body, kind, max_tokens_limit=self.max_tokens_limit,
                                features=self.features | {"stream"})
        except ValueError as e:
            raise ServiceError(400, str(e)) from None
        futs: list[Future] = []
        for choice in range(req.n):
            fut: Future = Future()
            self._queue.put((req, choice, fut))
            futs.append(fut)
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        results: list[Any] = []
        for fut in futs:
            while True:
                try:
                    results.append(fut.result(timeout=0.25))
                    break
                except TimeoutError:
                    if gone is not None and gone():
                        cancelled = [f.cancel() for f in futs]
                        if any(cancelled):
                            self.dropped += 1  # a client that timed out and left: its request is never generated
                        raise ClientGone() from None
                    if time.monotonic() > deadline:
                        for f in futs:
                            f.cancel()
                        raise ServiceError(503, "generation timed out", "server_error") from None

        for res in results:
            if isinstance(res, RecordError):
                raise ServiceError(400, res.message, "invalid_request_error", res.type)
        choices = [{"text": c.text, "finish_reason": c.finish_reason, "logprobs": lp} for c, lp in results]
        prompt_tokens = results[0][0].prompt_tokens
        completion = sum(c.completion_tokens for c, _ in results)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                 "total_tokens": prompt_tokens + completion}
        return {"choices": choices, "usage": usage}

    def _take_batch(self) -> list[tuple[Any, int, Future]]:
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
        from ppt.io import RecordError
        from ppt.remote.backends import run_local
        from ppt.rng import derive_seed, record_generator

        while not self._stop.is_set():
            batch = [(r, c, f) for r, c, f in self._take_batch() if f.set_running_or_notify_cancel()]
            if not batch:
                continue
            self.batches.append(len(batch))
            reqs = [r for r, _, _ in batch]
            # choice c of a seeded request samples from its own stream: batching never changes it
            gens = [record_generator(None if r.seed is None else derive_seed(r.seed, "serve"), c) for r, c, _ in batch]
            try:
                results = run_local(self.generator, reqs, gens)
                results = [res if isinstance(res, RecordError) else
                           (res, None if r.logprobs is None else token_logprobs(self.generator, r.prompt, res.text,
                                                                                r.logprobs))
                           for r, res in zip(reqs, results)]
            except Exception as e:  # noqa: BLE001 - report to every waiting client, keep serving
                logger.warning(f"serve: generation failed ({type(e).__name__}: {str(e)[:200]})")
                err = ServiceError(500, "generation failed", "server_error")
                for _, _, fut in batch:
                    fut.set_exception(err)
                continue
            for (_, _, fut), res in zip(batch, results):
                fut.set_result(res)

    def close(self, timeout: float = 5.0) -> bool:
        """Stop the worker; True when it is still busy with a batch after ``timeout`` seconds."""
        self._stop.set()
        self._worker.join(timeout=timeout)
        return self._worker.is_alive()


def token_logprobs(generator: Any, prompt: Any, text: str, k: int) -> list[tuple[str, float, list[tuple[str, float]]]]:
    """Per-token log-probabilities of ``text`` after ``prompt`` under the model (temperature 1), with the
    top ``k`` alternatives at each position: one forward pass over the prompt and the text as the
    tokenizer splits it (the tokens' strings join to the text)."""
    import torch

    tok, model = generator.tokenizer, generator.model
    rendered, special = generator.render(prompt)
    p_ids = list(tok(rendered, add_special_tokens=special)["input_ids"])
    c_ids = list(tok(text, add_special_tokens=False)["input_ids"]) if text else []
    limit = getattr(generator, "context_length", None)
    if limit:
        c_ids = c_ids[: max(0, limit - len(p_ids))]
    if not c_ids or not p_ids:
        return []
    with torch.inference_mode():
        ids = torch.tensor([p_ids + c_ids], device=generator.device)
        logits = model(input_ids=ids).logits[0, len(p_ids) - 1 : len(p_ids) + len(c_ids) - 1].float()
        lp = torch.log_softmax(logits, dim=-1)
        chosen = lp.gather(1, torch.tensor(c_ids, device=lp.device)[:, None])[:, 0].tolist()
        top = lp.topk(k, dim=-1) if k > 0 else None
        top_vals = top.values.tolist() if top is not None else [[] for _ in c_ids]
        top_ids = top.indices.tolist() if top is not None else [[] for _ in c_ids]
    pieces = _token_strings(tok, c_ids)
    return [(pieces[j], float(chosen[j]), [(tok.decode([t]), float(v)) for t, v in zip(top_ids[j], top_vals[j])])
            for j in range(len(c_ids))]


def _token_strings(tok: Any, ids: list[int]) -> list[str]:
    """Each token's share of the decoded text (so the pieces join to it; a byte split across tokens
    shows up in the token that completes it)."""
    out, prev = [], ""
    for j in range(len(ids)):
        cur = tok.decode(ids[: j + 1])
        if cur.startswith(prev) and not cur.endswith("\ufffd"):
            out.append(cur[len(prev):])
            prev = cur
        else:
            out.append("")
    if out and prev != tok.decode(ids):
        out[-1] += tok.decode(ids)[len(prev):]
    return out


# ---------------------------------------------------------------------- what both HTTP layers share


def check_bearer(expected: str | None, header: str | None) -> ServiceError | None:
    """None when the request may proceed: no key configured, or ``Authorization: Bearer <key>``."""
    if expected is None:
        return None
    given = (header or "").strip()
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), expected.encode()):
        return ServiceError(401, "missing or wrong bearer token (send Authorization: Bearer <key>)",
                            "invalid_request_error", "invalid_api_key")
    return None


def route(method: str, path: str) -> str | None:
    """``chat`` / ``completions`` / ``models`` / ``health`` for a known route, else None."""
    path = path.split("?", 1)[0].rstrip("/")
    if method == "GET":
        return {"/health": "health", "/v1/health": "health", "/v1/models": "models"}.get(path)
    if method == "POST":
        return {"/v1/chat/completions": "chat", "/v1/completions": "completions"}.get(path)
    return None


@dataclass
class Reply:
    """What to send: a JSON body, or server-sent events (``events``: each a JSON object or ``[DONE]``)."""

    status: int
    body: Any = None
    events: list[bytes] | None = None


def answer(service: Service, kind: str, raw: bytes, gone: Callable[[], bool] | None = None) -> Reply:
    """Parse, check what the service can serve, run, and shape one POST's reply (raises ClientGone)."""
    from ppt.remote.backends import parse_request

    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return Reply(400, ServiceError(400, "body is not valid JSON").body())
    if not isinstance(body, dict):
        return Reply(400, ServiceError(400, "request body must be a JSON object").body())
    try:  # features the HTTP layer serves for any service (stream) and what this one declares
        req = parse_request(body, kind, features=service.features | {"stream"}, strict=False)
    except ValueError as e:
        return Reply(400, ServiceError(400, str(e)).body())
    try:
        out = service.complete(body, kind, gone=gone)
    except ServiceError as e:
        return Reply(e.status, e.body())
    except ClientGone:
        raise
    except Exception as e:  # noqa: BLE001
        logger.warning(f"serve: request failed ({type(e).__name__})")
        return Reply(500, ServiceError(500, "internal error", "server_error").body())
    choices = out.get("choices") or [{"text": out["text"], "finish_reason": out.get("finish_reason"), "logprobs": None}]
    if len(choices) != req.n or (req.logprobs is not None and any(c.get("logprobs") is None for c in choices)):
        return Reply(500, ServiceError(500, "the service did not produce what was asked", "server_error").body())
    if req.stream:
        return Reply(200, events=sse_events(kind, service.name, choices, out.get("usage", {}), req))
    return Reply(200, response(kind, service.name, choices, out.get("usage", {}), req))


def _logprobs_json(kind: str, entries: list | None, k: int | None) -> Any:
    if entries is None or k is None:
        return None
    if kind == "chat":
        def item(tok: str, lp: float) -> dict:
            return {"token": tok, "logprob": lp, "bytes": list(tok.encode("utf-8"))}

        return {"content": [{**item(t, lp), "top_logprobs": [item(a, b) for a, b in top]} for t, lp, top in entries],
                "refusal": None}
    offsets, pos = [], 0
    for t, _, _ in entries:
        offsets.append(pos)
        pos += len(t)
    return {"tokens": [t for t, _, _ in entries], "token_logprobs": [lp for _, lp, _ in entries],
            "top_logprobs": [dict(top) for _, _, top in entries], "text_offset": offsets}


def response(kind: str, model: str, choices: list[dict], usage: dict, req: Any) -> dict:
    created = int(time.time())
    out = []
    for i, c in enumerate(choices):
        lp = _logprobs_json(kind, c.get("logprobs"), req.logprobs)
        if kind == "chat":
            out.append({"index": i, "message": {"role": "assistant", "content": c["text"]},
                        "finish_reason": c.get("finish_reason"), "logprobs": lp})
        else:
            out.append({"index": i, "text": c["text"], "finish_reason": c.get("finish_reason"), "logprobs": lp})
    if kind == "chat":
        return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": created,
                "model": model, "choices": out, "usage": usage}
    return {"id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion", "created": created,
            "model": model, "choices": out, "usage": usage}


def sse_events(kind: str, model: str, choices: list[dict], usage: dict, req: Any) -> list[bytes]:
    """The OpenAI streaming shape: per choice a role chunk (chat), a content chunk, a finish chunk; then a
    usage chunk when ``stream_options.include_usage``; then ``[DONE]``."""
    created = int(time.time())
    if kind == "chat":
        rid, obj = f"chatcmpl-{uuid.uuid4().hex[:24]}", "chat.completion.chunk"
    else:
        rid, obj = f"cmpl-{uuid.uuid4().hex[:24]}", "text_completion"
    extra = {"usage": None} if req.include_usage else {}

    def chunk(choice: dict | None) -> bytes:
        return orjson.dumps({"id": rid, "object": obj, "created": created, "model": model,
                             "choices": [choice] if choice is not None else [], **extra})

    events = []
    for i, c in enumerate(choices):
        lp = _logprobs_json(kind, c.get("logprobs"), req.logprobs)
        if kind == "chat":
            events.append(chunk({"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                                 "finish_reason": None}))
            events.append(chunk({"index": i, "delta": {"content": c["text"]}, "logprobs": lp, "finish_reason": None}))
            events.append(chunk({"index": i, "delta": {}, "logprobs": None, "finish_reason": c.get("finish_reason")}))
        else:
            events.append(chunk({"index": i, "text": c["text"], "logprobs": lp, "finish_reason": None}))
            events.append(chunk({"index": i, "text": "", "logprobs": None, "finish_reason": c.get("finish_reason")}))
    if req.include_usage:
        events.append(orjson.dumps({"id": rid, "object": obj, "created": created, "model": model, "choices": [],
                                    "usage": usage}))
    events.append(b"[DONE]")
    return events


def models_body(service: Service) -> dict:
    return {"object": "list", "data": [{"id": service.name, "object": "model", "created": 0, "owned_by": "ppt"}]}


# ---------------------------------------------------------------------- the standard-library HTTP layer


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
        for ev in events:
            self.wfile.write(b"data: " + ev + b"\n\n")
        self.wfile.flush()

    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            self.send_error_json(ServiceError(411, "send a Content-Length; chunked bodies are not supported"))
            return None
        values = self.headers.get_all("Content-Length") or []
        try:
            length = int(values[0]) if len(set(values)) == 1 else -1
        except ValueError:
            length = -1
        if not values:
            self.close_connection = True
            self.send_error_json(ServiceError(411, "a POST needs a Content-Length"))
            return None
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self.send_error_json(ServiceError(413 if length > MAX_BODY_BYTES else 400,
                                              f"Content-Length must be one integer in [0, {MAX_BODY_BYTES}]"))
            return None
        raw = self.rfile.read(length)  # a stalled client times out (socket timeout)
        if len(raw) < length:  # the client closed its side early: never process a truncated body
            self.close_connection = True
            self.send_error_json(ServiceError(400, "body shorter than its Content-Length"))
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
        self.send_error_json(err, {"WWW-Authenticate": "Bearer"})
        return False

    # -- routes
    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        what = route("GET", self.path)
        if what == "health":
            self.send_json(200, {"status": "ok"})
        elif not self._authorized():
            return
        elif what == "models":
            self.send_json(200, models_body(self.server.service))
        else:
            self.send_error_json(ServiceError(404, "no such route", "not_found"))

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
            self.send_error_json(ServiceError(404, "no such route", "not_found"))
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
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], service: Service | None,
                 verbose: bool = False, *, api_key: str | None = None, socket_timeout_s: float = SOCKET_TIMEOUT_S,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        super().__init__(address, handler)
        self.service, self.verbose, self.api_key = service, verbose, api_key
        self.socket_timeout_s = socket_timeout_s
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


def make_server(service: Service | None, host: str = "127.0.0.1", port: int = 8000,
                handler: type[BaseHTTPRequestHandler] = OpenAIHandler, verbose: bool = False, **options: Any
                ) -> OpenAIServer:
    """Bind (port 0 = an ephemeral port; read it from ``server.server_address``) without serving yet.
    ``options``: api_key, socket_timeout_s, max_connections (see OpenAIServer)."""
    cls = OpenAIServer
    if ":" in host:  # IPv6 literal
        cls = type("OpenAIServer6", (OpenAIServer,), {"address_family": socket.AF_INET6})
    return cls((host, port), handler, service, verbose, **options)


def start_server(service: Service, host: str = "127.0.0.1", port: int = 0,
                 handler: type[BaseHTTPRequestHandler] = OpenAIHandler, verbose: bool = False, **options: Any
                 ) -> tuple[OpenAIServer, threading.Thread]:
    """Bind and serve in a daemon thread (tests, benchmarks); stop with ``server.shutdown()``."""
    server = make_server(service, host, port, handler, verbose, **options)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
                              name="ppt-serve-http")
    thread.start()
    return server, thread
