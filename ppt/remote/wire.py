"""The OpenAI wire format as the client reads it: answers from response bodies, the safe part of error
bodies, and Retry-After headers."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import orjson

from ppt.io import RecordError
from ppt.remote.backends import Answer


def retry_after_s(headers: Any) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_detail(resp: Any) -> str:
    """``type/code`` from an OpenAI-style error body; the free-text message is left out because
    servers may echo request content into it."""
    try:
        err = orjson.loads(resp.content).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return ""
    if not isinstance(err, dict):
        return ""
    bits = [str(err[k])[:60] for k in ("type", "code") if isinstance(err.get(k), (str, int)) and err.get(k)]
    return ", ".join(bits)


def parse_response(data: Any, kind: str) -> Answer | RecordError:
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
        return RecordError("bad_response", "the endpoint's response has no choices")
    choice = data["choices"][0]
    if not isinstance(choice, dict):
        return RecordError("bad_response", "the endpoint's response has a malformed choice")
    if kind == "chat":
        message = choice.get("message") or {}
        text = message.get("content") if isinstance(message, dict) else None
        if text is None and isinstance(message, dict) and message.get("refusal"):
            return RecordError("refused", "the model refused to answer")
    else:
        text = choice.get("text")
    if not isinstance(text, str):
        return RecordError("bad_response", "the endpoint's response has no text content")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    usage = {
        k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens") if isinstance(usage.get(k), int)
    }
    return Answer(
        text=text,
        finish_reason=choice.get("finish_reason"),
        usage=usage,
        response_id=data.get("id") if isinstance(data.get("id"), str) else None,
        model=data.get("model") if isinstance(data.get("model"), str) else None,
    )
