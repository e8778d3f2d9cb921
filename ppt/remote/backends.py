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
    n: int = 1  # choices wanted
    logprobs: int | None = None  # None: not requested; k >= 0: per-token logprobs with the top k alternatives
    stream: bool = False  # answer as server-sent events
    include_usage: bool = False  # stream_options.include_usage


# cheap bounds checked before a request reaches the model thread (P-m5: 289k empty messages in 8 MB tied it up
# for seconds while they were rendered and tokenized): no context window holds more
MAX_MESSAGES = 4096
MAX_PROMPT_CHARS = 2_000_000


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


CHAT_ROLES = frozenset({"system", "developer", "user", "assistant"})
MAX_N = 8
MAX_LOGPROBS = {"completions": 5, "chat": 20}  # OpenAI's limits
_COMMON_KEYS = {
    "model",
    "max_tokens",
    "temperature",
    "top_p",
    "stop",
    "seed",
    "n",
    "stream",
    "stream_options",
    "logprobs",
    "user",
    "metadata",
    "store",
}
_KEYS = {
    "chat": _COMMON_KEYS | {"messages", "max_completion_tokens", "top_logprobs"},
    "completions": _COMMON_KEYS | {"prompt"},
}
# accepted only at the value that means "off": anything else would be silently ignored, so it is refused
_DEFAULT_ONLY = {
    "presence_penalty": (0, 0.0),
    "frequency_penalty": (0, 0.0),
    "logit_bias": ({},),
    "echo": (False,),
    "best_of": (1,),
    "suffix": ("",),
    "tools": ([],),
    "tool_choice": ("none",),
    "functions": ([],),
    "function_call": ("none",),
    "parallel_tool_calls": (False, True),
    "response_format": ({"type": "text"},),
}


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_request(
    body: Any,
    kind: str,
    *,
    max_tokens_limit: int | None = None,
    features: frozenset[str] | set[str] = frozenset(),
    strict: bool = True,
) -> GenRequest:
    """Validate an OpenAI chat/completions body; ValueError (a message safe to show) when it is bad.

    Every parameter is either honoured or refused, never ignored: ``features`` names what the caller
    can serve beyond one plain answer (``"n"``, ``"logprobs"``, ``"stream"``); other requests for them,
    unknown parameters and unsupported ones set to anything but their "off" value are refused
    (``strict=False`` leaves those to a service that may support them)."""
    from ppt.lm.base import SamplingParams

    if not isinstance(body, dict):
        raise ValueError("request body must be a JSON object")
    if kind not in _KEYS:
        raise ValueError(f"unknown endpoint kind {kind!r}")
    for key, value in body.items() if strict else ():
        if key in _KEYS[kind] or value is None:
            continue
        if key in _DEFAULT_ONLY:
            if value not in _DEFAULT_ONLY[key]:
                raise ValueError(f"'{key}' is not supported by this server (leave it unset)")
            continue
        raise ValueError(f"unknown or unsupported parameter '{str(key)[:40]}'")
    if "model" in body and body["model"] is not None and not isinstance(body["model"], str):
        raise ValueError("'model' must be a string")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise ValueError("'stream' must be a boolean")
    stream = bool(stream)
    if stream and "stream" not in features:
        raise ValueError("streaming is not supported here; send stream=false")
    options = body.get("stream_options")
    include_usage = False
    if options is not None:
        if not stream:
            raise ValueError("'stream_options' is only allowed with stream=true")
        if (
            not isinstance(options, dict)
            or set(options) - {"include_usage"}
            or not isinstance(options.get("include_usage", False), bool)
        ):
            raise ValueError("'stream_options' supports only {\"include_usage\": true|false}")
        include_usage = bool(options.get("include_usage", False))
    n = body.get("n")
    n = 1 if n is None else n
    if not _int(n) or not 1 <= n <= MAX_N:
        raise ValueError(f"'n' must be an integer in [1, {MAX_N}]")
    if n > 1 and "n" not in features:
        raise ValueError("only n=1 is supported here")
    logprobs: int | None = None
    if kind == "chat":
        lp, top = body.get("logprobs"), body.get("top_logprobs")
        if lp is not None and not isinstance(lp, bool):
            raise ValueError("'logprobs' must be a boolean")
        if top is not None and (not _int(top) or not 0 <= top <= MAX_LOGPROBS["chat"]):
            raise ValueError(f"'top_logprobs' must be an integer in [0, {MAX_LOGPROBS['chat']}]")
        if top is not None and not lp:
            raise ValueError("'top_logprobs' requires logprobs=true")
        if lp:
            logprobs = top or 0
    else:
        lp = body.get("logprobs")
        if lp is not None and (not _int(lp) or not 0 <= lp <= MAX_LOGPROBS["completions"]):
            raise ValueError(f"'logprobs' must be an integer in [0, {MAX_LOGPROBS['completions']}]")
        logprobs = lp
    if logprobs is not None and "logprobs" not in features:
        raise ValueError("logprobs are not supported here")
    if kind == "chat":
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("'messages' must be a non-empty list")
        if len(messages) > MAX_MESSAGES:  # checked before any rendering or tokenizing (one thread serves the model)
            raise ValueError(f"at most {MAX_MESSAGES} messages per request")
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise ValueError("each message needs a string 'role'")
            if m["role"] not in CHAT_ROLES:
                raise ValueError(
                    f"message role must be one of {', '.join(sorted(CHAT_ROLES))} "
                    "(tools and functions are not supported)"
                )
            extra = set(m) - {"role", "content", "name"}
            if extra:
                raise ValueError(f"unsupported message field '{str(sorted(extra)[0])[:40]}'")
            content = m.get("content")
            if isinstance(content, list):
                if not all(
                    isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content
                ):
                    raise ValueError(
                        'message content parts must be {"type": "text", "text": ...} '
                        "(images and audio are not supported)"
                    )
            elif not isinstance(content, str):
                raise ValueError("each message needs 'content' (a string or a list of text parts)")
        prompt: Any = messages
        if sum(len(_text(m.get("content"))) for m in messages) > MAX_PROMPT_CHARS:
            raise ValueError(f"the messages hold more than {MAX_PROMPT_CHARS} characters")
    else:
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str) or not prompt:
            raise ValueError("'prompt' must be a non-empty string")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise ValueError(f"the prompt holds more than {MAX_PROMPT_CHARS} characters")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS
    if not _int(max_tokens) or max_tokens < 1:
        raise ValueError("'max_tokens' must be a positive integer")
    if max_tokens_limit is not None and max_tokens > max_tokens_limit:
        raise ValueError(f"'max_tokens' must be <= {max_tokens_limit} on this server")
    temperature = body.get("temperature")
    temperature = 1.0 if temperature is None else temperature
    top_p = body.get("top_p")
    top_p = 1.0 if top_p is None else top_p
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
    if seed is not None and not _int(seed):
        raise ValueError("'seed' must be an integer")
    params = SamplingParams(
        max_new_tokens=max_tokens, temperature=float(temperature), top_p=float(top_p), stop=tuple(stops)
    )
    return GenRequest(
        prompt=prompt, params=params, seed=seed, n=n, logprobs=logprobs, stream=stream, include_usage=include_usage
    )


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
        from ppt.rng import seeded

        return {"backend": "local", **self.generator.describe(), "seeded": seeded(self.seed)}

    def run(self, items: Sequence[tuple[Any, dict]], kind: str, on_done: OnDone | None = None) -> list[Any]:
        from ppt.rng import record_torch_generator

        results: list[Any] = [None] * len(items)
        parsed: list[tuple[int, GenRequest]] = []
        for i, (_rid, body) in enumerate(items):
            try:
                parsed.append((i, parse_request(body, kind)))
            except ValueError as e:
                results[i] = RecordError("bad_request", str(e))
        t0 = time.monotonic()
        gens = [record_torch_generator(self.seed, items[i][0], "query") for i, _ in parsed]
        outs = run_local(self.generator, [r for _, r in parsed], gens)
        latency = time.monotonic() - t0
        for (i, _), res in zip(parsed, outs):
            if not isinstance(res, RecordError):
                res = Answer(
                    text=res.text,
                    finish_reason=res.finish_reason,
                    usage=res.usage,
                    latency_s=round(latency, 4),
                    model=self.generator.name,
                )
            results[i] = res
        if on_done is not None:
            for i, res in enumerate(results):
                on_done(i, res)
        return results

    def close(self, wait: bool = True) -> None:
        pass
