"""The language-model layer: one interface for local models, endpoints and fakes, and the model
helpers generation, scoring, the attacks and Cape share.

    from ppt.lm import LanguageModel, get_lm, LocalGenerator, SamplingParams, Completion
    door.py       get_lm: the one way to load a model (transformers or vllm runtime)
    base.py       LanguageModel protocol, Prompt, SamplingParams, Completion; context length, pad/eos, padding, batching, gathered logits
    generate.py   LocalGenerator: batched generation (chat templates, stops, per-record generators)
    score.py      continuation log-probs, last-token features
    masked.py     masked-LM predictions at masked positions (MTI)
    templates.py  the paper's prompts and {field} templates
    context.py    Cape's context model: features and candidate logits at requested positions

Importing this package does not import torch; the submodules that need it import it.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "LanguageModel": "ppt.lm.base",
    "get_lm": "ppt.lm.door",
    "LocalGenerator": "ppt.lm.generate",
    "SamplingParams": "ppt.lm.base",
    "Completion": "ppt.lm.base",
    "continuation_logprobs": "ppt.lm.score",
    "last_token_features": "ppt.lm.score",
    "Template": "ppt.lm.templates",
    "ContextModel": "ppt.lm.context",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ppt.lm' has no attribute {name!r}")
