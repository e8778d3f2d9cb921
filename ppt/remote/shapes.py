"""The OpenAI JSON shapes a reply takes: completion and chat bodies, streaming chunks (server-sent
events), logprobs in both endpoints' formats, the model list. Pure functions over generated choices, so
both HTTP transports send byte-for-byte the same answers."""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson


def _logprobs_json(kind: str, entries: list | None, k: int | None) -> Any:
    if entries is None or k is None:
        return None
    if kind == "chat":

        def item(tok: str, lp: float) -> dict:
            return {"token": tok, "logprob": lp, "bytes": list(tok.encode("utf-8"))}

        return {
            "content": [{**item(t, lp), "top_logprobs": [item(a, b) for a, b in top]} for t, lp, top in entries],
            "refusal": None,
        }
    offsets, pos = [], 0
    for t, _, _ in entries:
        offsets.append(pos)
        pos += len(t)
    return {
        "tokens": [t for t, _, _ in entries],
        "token_logprobs": [lp for _, lp, _ in entries],
        "top_logprobs": [dict(top) for _, _, top in entries],
        "text_offset": offsets,
    }


def response(kind: str, model: str, choices: list[dict], usage: dict, req: Any) -> dict:
    created = int(time.time())
    out = []
    for i, c in enumerate(choices):
        lp = _logprobs_json(kind, c.get("logprobs"), req.logprobs)
        if kind == "chat":
            out.append(
                {
                    "index": i,
                    "message": {"role": "assistant", "content": c["text"]},
                    "finish_reason": c.get("finish_reason"),
                    "logprobs": lp,
                }
            )
        else:
            out.append({"index": i, "text": c["text"], "finish_reason": c.get("finish_reason"), "logprobs": lp})
    if kind == "chat":
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": out,
            "usage": usage,
        }
    return {
        "id": f"cmpl-{uuid.uuid4().hex[:24]}",
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": out,
        "usage": usage,
    }


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
        return orjson.dumps(
            {
                "id": rid,
                "object": obj,
                "created": created,
                "model": model,
                "choices": [choice] if choice is not None else [],
                **extra,
            }
        )

    events = []
    for i, c in enumerate(choices):
        lp = _logprobs_json(kind, c.get("logprobs"), req.logprobs)
        if kind == "chat":
            events.append(
                chunk(
                    {"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
                )
            )
            events.append(chunk({"index": i, "delta": {"content": c["text"]}, "logprobs": lp, "finish_reason": None}))
            events.append(chunk({"index": i, "delta": {}, "logprobs": None, "finish_reason": c.get("finish_reason")}))
        else:
            events.append(chunk({"index": i, "text": c["text"], "logprobs": lp, "finish_reason": None}))
            events.append(chunk({"index": i, "text": "", "logprobs": None, "finish_reason": c.get("finish_reason")}))
    if req.include_usage:
        events.append(
            orjson.dumps({"id": rid, "object": obj, "created": created, "model": model, "choices": [], "usage": usage})
        )
    events.append(b"[DONE]")
    return events


def sse_body(events: list[bytes]) -> bytes:
    """Server-sent events framing: ``data: <event>`` and a blank line per event."""
    return b"".join(b"data: " + ev + b"\n\n" for ev in events)


def models_body(name: str) -> dict:
    return {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "ppt"}]}
