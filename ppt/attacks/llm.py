"""LLM inference attack (InferDPT Sec. VI-D "GPT inference attack", adapted): a generative model is
asked to restore the original text from the perturbed one.

The model is any :class:`ppt.lm.base.LanguageModel` (greedy decoding, one chat turn): a local causal
LM (``ppt.lm.get_lm``, default ``smollm2``; chat template when it has one) or an OpenAI-compatible
endpoint (:class:`ppt.remote.endpoint.EndpointLM`).

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

from ppt.io import RecordError
from ppt.lm.base import LanguageModel, SamplingParams
from ppt.metrics.rouge import rouge_l_tokens
from ppt.metrics.text import words

PROMPT = (
    "Some words of the text below were replaced at random by other words, and some were removed. "
    "Reconstruct the original text as faithfully as you can. Reply with the reconstructed text only.\n\n"
    "Text: {perturbed}"
)


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

    def __init__(
        self, lm: LanguageModel, prompt: str = PROMPT, max_new_tokens: int | None = None, tokens_per_word: float = 2.0
    ):
        if "{perturbed}" not in prompt:
            raise ValueError("the prompt template must contain {perturbed}")
        self.lm = lm
        self.prompt = prompt
        self.max_new_tokens = max_new_tokens
        self.tokens_per_word = tokens_per_word

    def budget(self, perturbed: str) -> int:
        if self.max_new_tokens:
            return int(self.max_new_tokens)
        n = len(perturbed.split())
        return int(min(1024, max(16, round(self.tokens_per_word * n) + 16)))

    def run(self, perturbed: list[str], originals: list[str]) -> list[dict | RecordError]:
        chats = [[{"role": "user", "content": self.prompt.replace("{perturbed}", p)}] for p in perturbed]
        # one SamplingParams per record: a local model runs one pass per distinct budget, so a record's
        # output does not depend on its batch
        params = [SamplingParams(max_new_tokens=self.budget(p), temperature=0.0) for p in perturbed]
        res: list[dict | RecordError] = []
        for o, p, r in zip(originals, perturbed, self.lm.generate(chats, params)):
            if isinstance(r, RecordError):
                res.append(r)
                continue
            res.append({"restored": r.text.strip(), **score(o, p, r.text)})
        return res
