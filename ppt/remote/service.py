"""What an OpenAI-compatible server serves, apart from HTTP: the ``Service`` contract both transports
call, and the two exceptions that cross it. Kept free of sockets and frameworks so the stdlib and the
uvicorn/starlette transports (and the SnD embedding server) share one definition."""

from __future__ import annotations

from collections.abc import Callable


class ServiceError(Exception):
    """An error the server reports to the client as ``{"error": {...}}`` with an HTTP status."""

    def __init__(self, status: int, message: str, type: str = "invalid_request_error", code: str | None = None) -> None:  # noqa: A002
        super().__init__(message)
        self.status, self.message, self.type, self.code = status, message, type, code

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "code": self.code}}


class ClientGone(Exception):
    """The client disconnected (or the server is stopping) before its answer was ready: nothing to send."""


class Service:
    """What the HTTP layer calls: ``complete(body, kind, gone)`` -> ``{"text", "finish_reason", "usage"}``.

    ``complete`` is called from several threads at once (one per request in flight, on either transport),
    so a service must be thread-safe: ModelService funnels every request into one worker thread that owns
    the model. ``gone()`` tells whether the client has disconnected or the server is stopping, so work
    nobody waits for can be dropped.
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
