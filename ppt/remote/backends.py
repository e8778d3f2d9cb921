"""What both sides of the wire share: OpenAI request bodies <-> generation requests, answers, and the
local backend that runs `ppt query`'s requests on a local causal LM (``--backend local``,
:class:`LocalQueryBackend`).

The local backend and ``ppt serve`` read the very same request bodies the HTTP client sends, so a
pipeline tested offline behaves like one talking to a remote endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ppt.io import RecordError

ENDPOINTS = {"chat": "/chat/completions", "completions": "/completions"}
DEFAULT_MAX_TOKENS = 128


@dataclass
class Answer:
    """One successful completion, whoever produced it."""

    text: str
    finish_reason: str | None
    usage: dict = field(default_factory=dict)  # prompt_tokens, completion_tokens, total_tokens
    attempts: int = 1
    latency_s: float = 0.0
    response_id: str | None = None
    model: str | None = None


OnDone = Callable[[int, "Answer | RecordError"], None]


@dataclass(frozen=True)
class GenRequest:
    """A request body parsed into what a local generator needs."""

    prompt: Any  # str (completions) or list of chat messages
    params: Any  # ppt.lm.generate.SamplingParams
    seed: int | None


def parse_request(body: Any, kind: str, *, max_tokens_limit: int | None = None) -> GenRequest:
    """Validate an OpenAI chat/completions body; ValueError (a message safe to show) when it is bad."""
    from ppt.lm.generate import SamplingParams

    if not isinstance(body, dict):
        raise ValueError("request body must be a JSON object")
    if body.get("stream"):
        raise ValueError("streaming is not supported; send stream=false")
    if body.get("n", 1) != 1:
        raise ValueError("only n=1 is supported")
    if kind == "chat":
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("'messages' must be a non-empty list")
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise ValueError("each message needs a string 'role'")
            if not isinstance(m.get("content"), (str, list)):
                raise ValueError("each message needs 'content' (a string or a list of parts)")
        prompt: Any = messages
    elif kind == "completions":
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str) or not prompt:
            raise ValueError("'prompt' must be a non-empty string")
    else:
        raise ValueError(f"unknown endpoint kind {kind!r}")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError("'max_tokens' must be a positive integer")
    if max_tokens_limit is not None and max_tokens > max_tokens_limit:
        raise ValueError(f"'max_tokens' must be <= {max_tokens_limit} on this server")
    temperature = body.get("temperature", 1.0)
    top_p = body.get("top_p", 1.0)
    for name, value, lo, hi in (("temperature", temperature, 0.0, 2.0), ("top_p", top_p, 0.0, 1.0)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (lo <= value <= hi):
            raise ValueError(f"'{name}' must be a number in [{lo:g}, {hi:g}]")
    if top_p == 0:
        top_p = 1e-9  # OpenAI accepts 0 (keep only the top token)
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else (stop or [])
    if not isinstance(stops, list) or len(stops) > 4 or any(not isinstance(s, str) or not s for s in stops):
        raise ValueError("'stop' must be a string or a list of up to 4 non-empty strings")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError("'seed' must be an integer")
    params = SamplingParams(max_new_tokens=max_tokens, temperature=float(temperature), top_p=float(top_p),
                            stop=tuple(stops))
    return GenRequest(prompt=prompt, params=params, seed=seed)


def run_local(
    generator: Any,
    requests: Sequence[GenRequest],
    generators: Sequence[Any],
) -> list[Any]:
    """Run parsed requests on a local LanguageModel (one batched pass per distinct SamplingParams);
    returns Completion or RecordError per request, in order."""
    return generator.generate([r.prompt for r in requests], [r.params for r in requests], generators)


class LocalQueryBackend:
    """``ppt query --backend local``: the same request bodies, answered by a local causal LM in batches.

    With ``seed`` each record samples from a generator derived from (seed, record id), so answers do not
    depend on batch size; without it, from OS entropy.
    """

    kind = "local"

    def __init__(self, generator: Any, seed: int | None = None) -> None:
        self.generator, self.seed = generator, seed

    def describe(self) -> dict:
        from ppt.rng import seed_label

        return {"backend": "local", **self.generator.describe(), "seed": seed_label(self.seed)}

    def run(self, items: Sequence[tuple[Any, dict]], kind: str, on_done: OnDone | None = None) -> list[Any]:
        from ppt.rng import record_generator

        results: list[Any] = [None] * len(items)
        parsed: list[tuple[int, GenRequest]] = []
        for i, (_rid, body) in enumerate(items):
            try:
                parsed.append((i, parse_request(body, kind)))
            except ValueError as e:
                results[i] = RecordError("bad_request", str(e))
        t0 = time.monotonic()
        gens = [record_generator(self.seed, items[i][0], "query") for i, _ in parsed]
        outs = run_local(self.generator, [r for _, r in parsed], gens)
        latency = time.monotonic() - t0
        for (i, _), res in zip(parsed, outs):
            if not isinstance(res, RecordError):
                res = Answer(text=res.text, finish_reason=res.finish_reason, usage=res.usage,
                             latency_s=round(latency, 4), model=self.generator.name)
            results[i] = res
        if on_done is not None:
            for i, res in enumerate(results):
                on_done(i, res)
        return results

    def close(self, wait: bool = True) -> None:
        pass
