"""Model-free stand-ins: ``FakeLM``, a LanguageModel whose answers come from a function, and
``EchoService``, a deterministic service for the loopback server, so attack, client and server
behaviour can be tested without a model.
"""

from __future__ import annotations

import collections
import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ppt.io import RecordError
from ppt.lm.base import Completion, SamplingParams
from ppt.lm.generate import content_text
from ppt.remote.service import Service, ServiceError

# ---------------------------------------------------------------------- a model-free LanguageModel


class FakeLM:
    """A LanguageModel (generation only) answering ``fn(prompt text)``: a string, or a RecordError for
    that prompt. Chat prompts are passed as their messages' contents joined by newlines. ``params``
    holds the SamplingParams of the last call, one per prompt."""

    tokenizer = None

    def __init__(self, fn: Callable[[str], str | RecordError], name: str = "fake") -> None:
        self.fn, self.name = fn, name
        self.params: list[SamplingParams] = []

    def describe(self) -> dict:
        return {"model": self.name}

    def generate(self, prompts: Sequence[Any], params: Any, generators: Sequence[Any] | None = None) -> list[Any]:
        self.params = [params] * len(prompts) if isinstance(params, SamplingParams) else list(params)
        out: list[Any] = []
        for p in prompts:
            text = p if isinstance(p, str) else "\n".join(content_text(m.get("content")) for m in p)
            r = self.fn(text)
            out.append(
                r
                if isinstance(r, RecordError)
                else Completion(
                    text=r, prompt_tokens=len(text.split()), completion_tokens=len(r.split()), finish_reason="stop"
                )
            )
        return out

    def score(self, pairs: Any, batch_size: int = 16) -> Any:
        raise NotImplementedError("FakeLM only generates")

    def logits_at(self, input_ids: Any, attn: Any, rows: Any, cols: Any) -> Any:
        raise NotImplementedError("FakeLM only generates")


# ---------------------------------------------------------------------- a model-free service


class EchoService(Service):
    """Answers ``echo <sha8 of the prompt>: <first words>`` after ``delay_s`` seconds (plus up to
    ``jitter_s``, fixed per prompt); records bodies and counts answers per prompt.

    Deterministic and instant (unless delayed), so client behaviour can be tested without a model.
    """

    def __init__(self, delay_s: float = 0.0, jitter_s: float = 0.0, name: str = "echo") -> None:
        self.delay_s, self.jitter_s, self.name = delay_s, jitter_s, name
        self.lock = threading.Lock()
        self.bodies: list[dict] = []
        self.answered: collections.Counter[str] = collections.Counter()

    def complete(self, body: dict, kind: str, gone: Any = None) -> dict:
        with self.lock:
            self.bodies.append(body)
        prompt = (
            body.get("prompt")
            if kind == "completions"
            else "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        )
        if not isinstance(prompt, str):
            raise ServiceError(400, "prompt must be a string", "invalid_request_error")
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
        delay = self.delay_s + self.jitter_s * (int(digest, 16) % 100) / 100
        if delay:
            time.sleep(delay)
        text = f"echo {digest}: " + " ".join(prompt.split()[:6])
        with self.lock:
            self.answered[digest] += 1
        n_prompt = len(prompt.split())
        return {
            "text": text,
            "finish_reason": "stop",
            "usage": {
                "prompt_tokens": n_prompt,
                "completion_tokens": len(text.split()),
                "total_tokens": n_prompt + len(text.split()),
            },
        }
