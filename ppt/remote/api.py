"""The HTTP semantics of `ppt serve`, without HTTP: which route a request names, whether its bearer
token lets it in, and what to answer a POST. Both transports (``http_stdlib`` and ``http_starlette``)
call these, through ``framing.decide_head`` for everything decided before the body (framing, body
size, auth, routes), so auth, limits, validation and reply bodies are decided once and proven
identical on each.

Request bodies and keys are never logged; errors name the problem, never the request's text.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ppt.log import logger
from ppt.remote.limits import refusal_response
from ppt.remote.service import ClientGone, Service, ServiceError
from ppt.remote.shapes import response, sse_events

MAX_BODY_BYTES = 8 << 20
MAX_HEADER_BYTES = 64 << 10  # request line and headers together
SOCKET_TIMEOUT_S = 30.0  # the deadline for a whole request (idle keep-alive, headers and body); see limits.py
MAX_CONNECTIONS = 64


def check_bearer(expected: str | None, header: str | None) -> ServiceError | None:
    """None when the request may proceed: no key configured, or ``Authorization: Bearer <key>``
    (compared in constant time)."""
    if expected is None:
        return None
    given = (header or "").strip()
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), expected.encode()):
        return ServiceError(
            401,
            "missing or wrong bearer token (send Authorization: Bearer <key>)",
            "invalid_request_error",
            "invalid_api_key",
        )
    return None


UNAUTHORIZED_HEADERS = {"WWW-Authenticate": "Bearer"}


def route(method: str, path: str) -> str | None:
    """``chat`` / ``completions`` / ``models`` / ``health`` for a known route, else None."""
    path = path.split("?", 1)[0].rstrip("/")
    if method == "GET":
        return {"/health": "health", "/v1/health": "health", "/v1/models": "models"}.get(path)
    if method == "POST":
        return {"/v1/chat/completions": "chat", "/v1/completions": "completions"}.get(path)
    return None


NOT_FOUND = ServiceError(404, "no such route", "not_found")
ROUTES = {
    "GET": {"/health", "/v1/health", "/v1/models"},
    "POST": {"/v1/chat/completions", "/v1/completions"},
}


def unrouted(method: str, path: str) -> tuple[ServiceError, dict[str, str]]:
    """The answer to a request no route takes, and its headers: 405 with ``Allow`` when the path exists for
    another method (``GET /v1/chat/completions``), else 404. Both transports answer with it."""
    path = path.split("?", 1)[0].rstrip("/")
    allowed = sorted(m for m, paths in ROUTES.items() if path in paths and m != method)
    if allowed:
        return ServiceError(405, f"method {method} not allowed here", "invalid_request_error"), {
            "Allow": ", ".join(allowed)
        }
    return NOT_FOUND, {}


def unknown_model(service: Service, body: dict) -> ServiceError | None:
    """OpenAI's 404 ``model_not_found`` when the request names a model this server does not serve (a typo in
    ``ppt query --model`` must not be answered by whatever model is loaded). Services that declare no
    ``served_names`` (test fakes) take any name."""
    names = getattr(service, "served_names", None)
    model = body.get("model")
    if not names or model in names:
        return None
    shown = model if isinstance(model, str) and len(model) <= 100 else "that model"
    return ServiceError(
        404,
        f"The model `{shown}` does not exist; this server serves {', '.join(sorted(names))}",
        "invalid_request_error",
        "model_not_found",
    )


LOADING = ServiceError(503, "the model is still loading", "server_error")  # bound before the model loads


def over_capacity(why: str) -> bytes:
    """The whole response to a connection over a cap (``ppt.remote.limits``): the same bytes on both transports."""
    return refusal_response(orjson.dumps(ServiceError(503, why, "server_error").body()))


@dataclass
class Reply:
    """What to send: a JSON body, or server-sent events (``events``: each a JSON object or ``[DONE]``)."""

    status: int
    body: Any = None
    events: list[bytes] | None = None


def answer(service: Service, kind: str, raw: bytes, gone: Callable[[], bool] | None = None) -> Reply:
    """Parse, check what the service can serve, run, and shape one POST's reply (raises ClientGone).
    Blocks while the service generates: transports call it from a worker thread."""
    from ppt.remote.backends import parse_request

    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return Reply(400, ServiceError(400, "body is not valid JSON").body())
    if not isinstance(body, dict):
        return Reply(400, ServiceError(400, "request body must be a JSON object").body())
    missing = unknown_model(service, body)
    if missing is not None:
        return Reply(missing.status, missing.body())
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
