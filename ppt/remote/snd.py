"""The Split-N-Denoise server half over HTTP, and its client.

Why a protocol of its own (not the OpenAI one): the server receives nothing but privatized token rows
and returns pooled embeddings. The wire format is small JSON with base64 float32 arrays:

    GET  /health                 {"status": "ok"}
    GET  /v1/snd/info            {"model", "model_hash", "pooling", "dim", "out_dim"}
    POST /v1/snd/embed           {"inputs": [{"shape": [n_i, d], "data": b64 f32le}, ...]}
                              -> {"embeddings": [{"shape": [out_dim], "data": b64 f32le}, ...], "model_hash"}

The same rules as ``ppt serve``: loopback only unless the command allows otherwise with a bearer token
(checked with a constant-time compare, before the body is read), a deadline for each whole request,
caps on open connections (in total and per client address) and on body size, request bodies never
logged. The stdlib server is enough here: one small request per client batch.
"""

from __future__ import annotations

import base64
import hmac
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson
import torch

from ppt.io import ExitCode, PptError
from ppt.remote.auth import check_base_url, redact_url
from ppt.remote.capped import CappedThreadingServer, DeadlineRequestHandler

MAX_BODY_BYTES = 64 << 20
MAX_RECORDS = 1024
INFO, EMBED = "/v1/snd/info", "/v1/snd/embed"


class WireError(ValueError):
    """A malformed request or response (the message never contains the payload)."""


def encode(t: torch.Tensor) -> dict[str, Any]:
    a = t.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4", copy=False)
    return {"shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode("ascii")}


def decode(obj: Any, ndim: int, last: int | None = None, max_rows: int | None = None) -> torch.Tensor:
    if not isinstance(obj, dict) or not isinstance(obj.get("shape"), list) or not isinstance(obj.get("data"), str):
        raise WireError("each array must be {shape: [...], data: base64}")
    shape = obj["shape"]
    if len(shape) != ndim or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
        raise WireError(f"an array's shape must be {ndim} positive integers")
    if last is not None and shape[-1] != last:
        raise WireError(f"an array's last dimension must be {last}")
    if max_rows is not None and ndim == 2 and shape[0] > max_rows:
        raise WireError(f"at most {max_rows} rows per input")
    try:
        raw = base64.b64decode(obj["data"], validate=True)
    except ValueError:
        raise WireError("data is not base64") from None
    if len(raw) != 4 * int(np.prod(shape)):
        raise WireError("data length does not match the shape")
    a = np.frombuffer(raw, dtype="<f4").reshape(shape)
    if not np.isfinite(a).all():
        raise WireError("non-finite values")
    return torch.from_numpy(a.astype(np.float32))


class SndService:
    """The server half: decodes rows, pools them (one batch at a time), encodes the answer.

    ``on_request(rows)`` sees exactly what arrived (tests record it)."""

    def __init__(self, split: Any, on_request: Callable[[list[torch.Tensor]], None] | None = None) -> None:
        self.split = split
        self.on_request = on_request
        self._lock = threading.Lock()

    def info(self) -> dict[str, Any]:
        d = self.split.describe()
        return {
            "model": d["id"],
            "model_hash": d["hash"],
            "pooling": d["pooling"],
            "dim": d["dim"],
            "out_dim": d["out_dim"],
            "max_rows": self.split.max_length,
        }

    def embed(self, raw: bytes) -> dict[str, Any]:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise WireError("body is not JSON") from None
        inputs = body.get("inputs") if isinstance(body, dict) else None
        if not isinstance(inputs, list) or not 0 < len(inputs) <= MAX_RECORDS:
            raise WireError(f"'inputs' must be a list of 1 to {MAX_RECORDS} arrays")
        rows = [decode(x, 2, self.split.dim, self.split.max_length) for x in inputs]
        if self.on_request is not None:
            self.on_request(rows)
        with self._lock:
            pooled = self.split.server_pool(rows)
        if not all(bool(torch.isfinite(p).all()) for p in pooled):  # finite but huge rows (3e38) overflow the model
            raise WireError("the rows are too large for the model: its output is not finite")
        return {"embeddings": [encode(p) for p in pooled], "model_hash": self.split.hash}


class SndHandler(DeadlineRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ppt-snd"
    server: SndServer

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:  # request line and status only, never bodies
            sys.stderr.write(f"ppt: snd serve: {self.address_string()} {format % args}\n")

    def send_json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        data = orjson.dumps(obj)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def error(self, status: int, message: str, extra: dict[str, str] | None = None) -> None:
        self.close_connection = True
        self.send_json(status, {"error": {"message": message}}, extra)

    def authorized(self) -> bool:
        key = self.server.api_key
        if key is None:
            return True
        scheme, _, token = (self.headers.get("Authorization") or "").strip().partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode()):
            return True
        self.error(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})
        return False

    def loading(self) -> bool:
        """True (and 503 with Retry-After answered) while `ppt snd serve` is still loading its model."""
        if self.server.service is not None:
            return False
        self.error(503, "the model is still loading", {"Retry-After": "5"})
        return True

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/health":
            self.send_json(200, {"status": "ok"})
        elif not self.authorized():
            return
        elif path == INFO and self.loading():
            return
        elif path == INFO:
            self.send_json(200, self.server.service.info())
        else:
            self.error(404, "no such route")

    def do_POST(self) -> None:
        if not self.authorized():
            return
        if self.path.split("?", 1)[0].rstrip("/") != EMBED:
            self.error(404, "no such route")
            return
        if self.loading():
            return
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.error(411, "send a Content-Length")
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self.error(413 if length > MAX_BODY_BYTES else 411, f"Content-Length must be in [0, {MAX_BODY_BYTES}]")
            return
        raw = self.rfile.read(length)  # a slow or stalled client is cut at the request's deadline
        if len(raw) < length:
            self.error(400, "body shorter than its Content-Length")
            return
        try:
            out = self.server.service.embed(raw)
        except WireError as e:
            self.error(400, str(e))
            return
        self.send_json(200, out)


class SndServer(CappedThreadingServer):
    """The SnD server half: at most ``max_connections`` threads and ``max_client_connections`` from one
    client address, a 503 over either cap."""

    def __init__(
        self,
        address: tuple[str, int],
        service: SndService | None,
        *,
        api_key: str | None = None,
        socket_timeout_s: float = 30.0,
        max_connections: int = 32,
        max_client_connections: int | None = None,
        verbose: bool = False,
    ) -> None:
        super().__init__(address, SndHandler, max_connections, max_client_connections)
        self.service, self.api_key, self.verbose = service, api_key, verbose
        self.socket_timeout_s = socket_timeout_s

    def report_error(self, exc_name: str) -> None:
        sys.stderr.write(f"ppt: snd serve: error handling a request ({exc_name})\n")


def make_snd_server(service: SndService | None, host: str = "127.0.0.1", port: int = 0, **options: Any) -> SndServer:
    import socket

    cls = SndServer
    if ":" in host:
        cls = type("SndServer6", (SndServer,), {"address_family": socket.AF_INET6})
    return cls((host, port), service, **options)


def start_snd_server(
    service: SndService, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> tuple[SndServer, threading.Thread]:
    """Bind and serve in a daemon thread (tests); stop with ``server.shutdown()``."""
    server = make_snd_server(service, host, port, **options)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread


class SndClient:
    """``client(rows) -> [n, out_dim]``: the server half behind a URL (a ``Pool`` for ``snd_embed``)."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout_s: float = 120.0) -> None:
        import httpx

        self.base_url = check_base_url(base_url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s, trust_env=False)
        self._info: dict[str, Any] | None = None

    def _call(self, method: str, path: str, body: bytes | None = None) -> Any:
        import httpx

        where = redact_url(self.base_url)
        try:
            r = self._http.request(
                method, path, content=body, headers={"Content-Type": "application/json"} if body is not None else None
            )
        except httpx.HTTPError as e:
            raise PptError(
                f"snd server {where}: {type(e).__name__}",
                ExitCode.UNAVAILABLE,
                hint="is `ppt snd serve` running there?",
            ) from None
        if r.status_code != 200:
            code = ExitCode.CONFIG if r.status_code in (401, 403) else ExitCode.UNAVAILABLE
            raise PptError(
                f"snd server {where} answered HTTP {r.status_code}",
                code,
                hint="check --api-key-env" if r.status_code == 401 else None,
            )
        try:
            return orjson.loads(r.content)
        except orjson.JSONDecodeError:
            raise PptError(f"snd server {where} sent a body that is not JSON", ExitCode.UNAVAILABLE) from None

    def info(self) -> dict[str, Any]:
        if self._info is None:
            self._info = self._call("GET", INFO)
        return self._info

    def __call__(self, rows: list[torch.Tensor]) -> torch.Tensor:
        if not rows:
            return torch.zeros((0, int(self.info()["out_dim"])))
        out = self._call("POST", EMBED, orjson.dumps({"inputs": [encode(r) for r in rows]}))
        embs = out.get("embeddings") if isinstance(out, dict) else None
        if not isinstance(embs, list) or len(embs) != len(rows):
            raise PptError(f"snd server {redact_url(self.base_url)}: wrong number of embeddings", ExitCode.UNAVAILABLE)
        try:
            return torch.stack([decode(e, 1, int(self.info()["out_dim"])) for e in embs])
        except WireError as e:
            raise PptError(f"snd server {redact_url(self.base_url)}: {e}", ExitCode.UNAVAILABLE) from None

    def close(self) -> None:
        self._http.close()
