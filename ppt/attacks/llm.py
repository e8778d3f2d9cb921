"""LLM inference attack (InferDPT Sec. VI-D "GPT inference attack", adapted): a generative model is
asked to restore the original text from the perturbed one.

Backends: a local causal LM (default ``smollm2``; chat template when it has one, greedy decoding) or
an OpenAI-compatible endpoint through :mod:`ppt.remote` (imported only when used).

Scores per record (word tokens of :func:`ppt.metrics.text.words`, multisets):
- ``hidden``: original words the perturbed text does not show, ``max(0, #orig(t) - #pert(t))``;
- ``recovered``: hidden words the restoration brings back beyond the copies of the original that the
  perturbed text already showed, ``min(hidden(t), max(0, #rest(t) - min(#pert(t), #orig(t))))``;
- token recovery rate = recovered / hidden (the attack's success rate; privacy = 1 - rate);
- Rouge-L F1 of the restoration against the original, next to the perturbed text's own Rouge-L F1
  (how much the attack adds over reading the perturbed text).
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from ppt.io import RecordError
from ppt.metrics.rouge import rouge_l_tokens
from ppt.metrics.text import words

PROMPT = (
    "Some words of the text below were replaced at random by other words, and some were removed. "
    "Reconstruct the original text as faithfully as you can. Reply with the reconstructed text only.\n\n"
    "Text: {perturbed}"
)


class Backend(Protocol):
    name: str

    def complete(self, prompts: list[str], max_new_tokens: list[int]) -> list[str | RecordError]: ...


class LocalBackend:
    """A local causal LM through :class:`ppt.generation.LocalGenerator` (greedy)."""

    def __init__(self, model: str = "smollm2", device: str = "auto", batch_size: int = 8, generator=None):
        if generator is None:
            from ppt.generation import LocalGenerator

            generator = LocalGenerator.load(model, device=device, batch_size=batch_size)
        self.gen = generator
        self.name = model

    def complete(self, prompts: list[str], max_new_tokens: list[int]) -> list[str | RecordError]:
        from ppt.generation import SamplingParams

        # one call per distinct budget keeps each record's output independent of its batch
        out: list[str | RecordError] = [""] * len(prompts)
        by_budget: dict[int, list[int]] = {}
        for i, m in enumerate(max_new_tokens):
            by_budget.setdefault(m, []).append(i)
        for m, idx in by_budget.items():
            msgs = [[{"role": "user", "content": prompts[i]}] for i in idx]
            res = self.gen.generate(msgs, SamplingParams(max_new_tokens=m, temperature=0.0))
            for i, r in zip(idx, res):
                out[i] = r if isinstance(r, RecordError) else r.text
        return out


class EndpointBackend:
    """An OpenAI-compatible chat endpoint through :class:`ppt.remote.HttpBackend` (temperature 0;
    retries, timeouts and key handling are the client's). The key comes from the environment only."""

    def __init__(self, base_url: str, model: str, api_key_env: str | None = None, concurrency: int = 4,
                 timeout_s: float = 120.0, client=None):
        if client is None:
            from ppt.remote.auth import resolve_api_key
            from ppt.remote.client import HttpBackend

            client = HttpBackend(base_url, api_key=resolve_api_key(api_key_env, base_url), concurrency=concurrency,
                                 timeout_s=timeout_s)
        self.client, self.model = client, model
        self.name = model

    def complete(self, prompts: list[str], max_new_tokens: list[int]) -> list[str | RecordError]:
        bodies = [(i, {"model": self.model, "messages": [{"role": "user", "content": p}], "max_tokens": int(m),
                       "temperature": 0.0}) for i, (p, m) in enumerate(zip(prompts, max_new_tokens))]
        return [r if isinstance(r, RecordError) else r.text for r in self.client.run(bodies, "chat")]


def recovery_counts(original: str, perturbed: str, restored: str) -> tuple[int, int]:
    """(recovered, hidden) word counts, see the module docstring."""
    o, p, r = Counter(words(original)), Counter(words(perturbed)), Counter(words(restored))
    hidden = recovered = 0
    for t, co in o.items():
        h = max(0, co - p[t])
        if h:
            hidden += h
            recovered += min(h, max(0, r[t] - min(p[t], co)))
    return recovered, hidden


def score(original: str, perturbed: str, restored: str) -> dict:
    recovered, hidden = recovery_counts(original, perturbed, restored)
    ow = words(original)
    return {
        "recovered": recovered,
        "hidden": hidden,
        "rate": recovered / hidden if hidden else None,
        "rouge_l": rouge_l_tokens(words(restored), ow)["f1"],
        "rouge_l_perturbed": rouge_l_tokens(words(perturbed), ow)["f1"],
    }


class LlmAttack:
    name = "llm"

    def __init__(self, backend: Backend, prompt: str = PROMPT, max_new_tokens: int | None = None, tokens_per_word: float = 2.0):
        if "{perturbed}" not in prompt:
            raise ValueError("the prompt template must contain {perturbed}")
        self.backend = backend
        self.prompt = prompt
        self.max_new_tokens = max_new_tokens
        self.tokens_per_word = tokens_per_word

    def budget(self, perturbed: str) -> int:
        if self.max_new_tokens:
            return int(self.max_new_tokens)
        n = len(perturbed.split())
        return int(min(1024, max(16, round(self.tokens_per_word * n) + 16)))

    def run(self, perturbed: list[str], originals: list[str]) -> list[dict | RecordError]:
        prompts = [self.prompt.replace("{perturbed}", p) for p in perturbed]
        outs = self.backend.complete(prompts, [self.budget(p) for p in perturbed])
        res: list[dict | RecordError] = []
        for o, p, r in zip(originals, perturbed, outs):
            if isinstance(r, RecordError):
                res.append(r)
                continue
            res.append({"restored": r.strip(), **score(o, p, r)})
        return res
