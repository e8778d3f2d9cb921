"""Zero-shot accuracy of an instruction: each label word scored by log-probability after the forward
template, the best one predicted; a Wilson 95% interval on the accuracy."""

from __future__ import annotations

import math

import numpy as np

from ppt.dpopt.templates import forward


def label_logprobs(
    model,
    tokenizer,
    instruction: str,
    texts: list[str],
    labels: list[str],
    batch_size: int = 16,
    *,
    alone: bool = False,
) -> np.ndarray:
    """[len(texts), len(labels)] sum log P(' ' + label | forward template) under a local causal LM.

    ``alone=True`` scores each text in a forward pass of its own (batch of one, no padding, no cache shared
    with other texts), so its row is a function of that text, the instruction and the labels only: bit-identical
    whichever other texts are scored in the same call. DP-OPT's privacy argument (one record changes one
    subset's vote, one count of the selection) needs that; batched scoring moves a row by ~1e-5 with the
    padding and the batch's shared prefix, which can flip a near-tie."""
    if alone:  # a batch of one: no padding, and a one-row prompt list never takes the shared-prefix cache
        rows = [_batched(model, tokenizer, instruction, [t], labels, len(labels)) for t in texts]
        return np.concatenate(rows, axis=0) if rows else np.zeros((0, len(labels)), dtype=np.float64)
    return _batched(model, tokenizer, instruction, texts, labels, batch_size)


def _batched(model, tokenizer, instruction: str, texts: list[str], labels: list[str], batch_size: int) -> np.ndarray:
    from ppt.lm.base import bos_prefix, pad_id
    from ppt.lm.score import continuation_logprobs

    bos = bos_prefix(tokenizer)
    conts = [tokenizer(" " + y, add_special_tokens=False)["input_ids"] for y in labels]
    if all(len(c) == 1 for c in conts):  # one forward pass per text scores every label at once
        prefixes = [bos + tokenizer(forward(instruction, t), add_special_tokens=False)["input_ids"] for t in texts]
        return _single_token_logprobs(model, prefixes, [c[0] for c in conts], pad_id(tokenizer), batch_size)
    pairs = []
    for t in texts:
        pre = bos + tokenizer(forward(instruction, t), add_special_tokens=False)["input_ids"]
        pairs += [(pre, c) for c in conts]
    scores = continuation_logprobs(model, pairs, pad_id=pad_id(tokenizer), batch_size=batch_size)
    return np.array([s for s, _ in scores], dtype=np.float64).reshape(len(texts), len(labels))


def _single_token_logprobs(
    model, prefixes: list[list[int]], label_ids: list[int], pad: int, batch_size: int
) -> np.ndarray:
    """The label columns of each prompt's last-position log-softmax. The prompts' longest common prefix (the
    template and the instruction, with in-context demonstrations hundreds of tokens) is encoded once and its
    KV cache expanded over each batch; only the rest of each prompt is encoded per row."""
    import torch

    from ppt.dpopt.ensemble import common_prefix

    p = len(common_prefix(prefixes)) - 1  # every row keeps at least one token of its own
    if p >= 8 and len(prefixes) > 1:
        try:
            return _prefix_cached(model, prefixes, label_ids, pad, batch_size, p)
        except (TypeError, ValueError, AttributeError, NotImplementedError, torch.OutOfMemoryError):
            pass  # a model whose cache cannot be copied or repeated: the plain path below gives the same figures
    return _plain(model, prefixes, label_ids, pad, batch_size)


def _plain(model, prefixes: list[list[int]], label_ids: list[int], pad: int, batch_size: int) -> np.ndarray:
    import torch

    from ppt.lm.base import gathered_logits, length_batches, model_device, right_pad

    dev = model_device(model)
    out = np.zeros((len(prefixes), len(label_ids)), dtype=np.float64)
    cols_l = torch.tensor(label_ids, dtype=torch.long)
    with torch.inference_mode():
        for idx in length_batches([len(p) for p in prefixes], batch_size):
            ids, attn = right_pad([prefixes[j] for j in idx], pad)
            rows = torch.arange(len(idx))
            last = torch.tensor([len(prefixes[j]) - 1 for j in idx], dtype=torch.long)
            logits = gathered_logits(model, ids.to(dev), attn.to(dev), rows.to(dev), last.to(dev)).float()
            lp = torch.log_softmax(logits, dim=-1)[:, cols_l.to(dev)].cpu().double().numpy()
            out[idx] = lp
    return out


def _prefix_cached(
    model, prefixes: list[list[int]], label_ids: list[int], pad: int, batch_size: int, p: int
) -> np.ndarray:
    import copy

    import torch

    from ppt.dpopt.ensemble import _last_only, _left_pad
    from ppt.lm.base import length_batches, model_device
    from ppt.lm.decode import cache_kwarg, returned_cache

    dev, kw, keep = model_device(model), cache_kwarg(model), _last_only(model)
    out = np.zeros((len(prefixes), len(label_ids)), dtype=np.float64)
    cols_l = torch.tensor(label_ids, dtype=torch.long, device=dev)
    with torch.inference_mode():
        ids = torch.tensor([prefixes[0][:p]], dtype=torch.long, device=dev)
        first = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True, **keep)
        shared = returned_cache(first)
        for idx in length_batches([len(x) for x in prefixes], batch_size):
            ids, attn = _left_pad([prefixes[j][p:] for j in idx], pad)
            attn = attn.to(dev)
            pos = (attn.cumsum(-1) - 1).clamp_(min=0) + p
            cache = copy.deepcopy(shared)
            cache.batch_repeat_interleave(len(idx))
            attn = torch.cat([torch.ones((len(idx), p), dtype=attn.dtype, device=dev), attn], dim=1)
            res = model(
                input_ids=ids.to(dev), attention_mask=attn, position_ids=pos, use_cache=True, **{kw: cache}, **keep
            )
            logits = res.logits[:, -1, :].float()
            out[idx] = torch.log_softmax(logits, dim=-1)[:, cols_l].cpu().double().numpy()
    return out


def predictions(logprobs: np.ndarray) -> np.ndarray:
    return logprobs.argmax(axis=1)


def wilson(correct: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = correct / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def accuracy(pred: np.ndarray, gold: np.ndarray) -> dict:
    n, c = len(gold), int((pred == gold).sum())
    lo, hi = wilson(c, n)
    return {"n": n, "correct": c, "accuracy": c / n if n else float("nan"), "ci95": [lo, hi]}
