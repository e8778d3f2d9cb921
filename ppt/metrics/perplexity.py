"""Perplexity of texts under a local causal LM: exp(mean negative log-likelihood per token).

The first token is scored after the tokenizer's BOS (or EOS) token; texts longer than the context keep
their last ``context`` tokens. The corpus value pools tokens (exp(total NLL / total tokens)), which
weights long texts more than the mean of per-text perplexities does; both are reported.
"""

from __future__ import annotations

import math

from ppt.lm.base import bos_prefix, pad_id
from ppt.lm.score import continuation_logprobs


def perplexities(model, tokenizer, texts: list[str], batch_size: int = 16) -> list[tuple[float, int]]:
    """(total NLL, token count) per text."""
    pre = bos_prefix(tokenizer)
    pairs = [(pre, tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    return [(-lp, n) for lp, n in continuation_logprobs(model, pairs, pad_id=pad_id(tokenizer), batch_size=batch_size)]


def ppl(nll: float, n: int) -> float | None:
    return math.exp(nll / n) if n else None
