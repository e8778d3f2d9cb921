"""An OpenAI-compatible endpoint as a LanguageModel (generation only), so code that needs a model to
write text (the LLM inference attack) runs on a local model and on a remote one through the same
interface. Retries, timeouts, concurrency and key handling are :class:`ppt.remote.client.HttpBackend`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ppt.io import RecordError
from ppt.lm.base import Completion, SamplingParams


class EndpointLM:
    """Chat messages go to ``/chat/completions``, plain prompts to ``/completions``; all prompts of
    one kind are sent together (``concurrency`` in flight). The key comes from the environment only;
    per-record generators are ignored (a seed is never sent to a remote party)."""

    tokenizer = None

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        concurrency: int = 4,
        timeout_s: float = 120.0,
        client: Any = None,
    ) -> None:
        if client is None:
            from ppt.remote.client import HttpBackend, resolve_api_key

            client = HttpBackend(
                base_url, api_key=resolve_api_key(api_key_env, base_url), concurrency=concurrency, timeout_s=timeout_s
            )
        self.client, self.model = client, model
        self.name = model

    def describe(self) -> dict:
        return {"model": self.name, **self.client.describe()}

    def generate(
        self,
        prompts: Sequence[Any],
        params: SamplingParams | Sequence[SamplingParams],
        generators: Sequence[Any] | None = None,
    ) -> list[Completion | RecordError]:
        each = [params] * len(prompts) if isinstance(params, SamplingParams) else list(params)
        by_kind: dict[str, list[tuple[int, dict]]] = {}
        for i, (prompt, p) in enumerate(zip(prompts, each)):
            kind = "completions" if isinstance(prompt, str) else "chat"
            body = {
                "model": self.model,
                ("prompt" if kind == "completions" else "messages"): prompt,
                "max_tokens": int(p.max_new_tokens),
                "temperature": p.temperature,
            }
            if p.top_p < 1.0:
                body["top_p"] = p.top_p
            if p.stop:
                body["stop"] = list(p.stop)
            by_kind.setdefault(kind, []).append((i, body))
        out: list[Any] = [None] * len(prompts)
        for kind, items in by_kind.items():
            for (i, _), r in zip(items, self.client.run(items, kind)):
                out[i] = (
                    r
                    if isinstance(r, RecordError)
                    else Completion(
                        text=r.text,
                        prompt_tokens=int(r.usage.get("prompt_tokens") or 0),
                        completion_tokens=int(r.usage.get("completion_tokens") or 0),
                        finish_reason=r.finish_reason or "stop",
                    )
                )
        return out

    def score(self, pairs: Any, batch_size: int = 16) -> Any:
        raise NotImplementedError("an OpenAI-compatible endpoint does not score token ids")

    def logits_at(self, input_ids: Any, attn: Any, rows: Any, cols: Any) -> Any:
        raise NotImplementedError("an OpenAI-compatible endpoint does not return logits")
