"""Causal-LM scoring shared by perplexity, zero-shot accuracy and MAUVE features.

``continuation_logprobs`` scores many (prefix, continuation) token-id pairs in right-padded batches:
one forward pass per batch, log-softmax gathered only at the continuation positions.
"""

from __future__ import annotations

import numpy as np
import torch

from ppt.lm.base import context_length, gathered_logits, length_batches, model_device, right_pad
from ppt.lm.base import pad_id as tokenizer_pad_id


@torch.inference_mode()
def continuation_logprobs(
    model, pairs: list[tuple[list[int], list[int]]], pad_id: int = 0, batch_size: int = 16
) -> list[tuple[float, int]]:
    """(sum of log P(continuation | prefix), number of continuation tokens) per pair.

    Sequences longer than the model's context keep their last ``context`` tokens (the prefix is cut
    from the left; a continuation longer than the context is cut too, and its count says so)."""
    ctx = context_length(model, 2048)
    seqs, starts = [], []
    for prefix, cont in pairs:
        ids = list(prefix) + list(cont)
        start = len(prefix)
        if len(ids) > ctx:
            cut = len(ids) - ctx
            ids, start = ids[cut:], max(1, start - cut)
        seqs.append(ids)
        starts.append(max(1, start))  # the first token has no prediction
    out: list[tuple[float, int]] = [(0.0, 0)] * len(pairs)
    dev = model_device(model)
    for idx in length_batches([len(s) for s in seqs], batch_size):
        ids, attn = right_pad([seqs[j] for j in idx], pad_id)
        rows, cols, owner = [], [], []
        for r, j in enumerate(idx):
            s, e = starts[j], len(seqs[j])
            rows += [r] * (e - s)
            cols += list(range(s - 1, e - 1))
            owner.append((j, len(rows) - (e - s), len(rows)))
        rows_t, cols_t = torch.tensor(rows, dtype=torch.long), torch.tensor(cols, dtype=torch.long)
        logits = gathered_logits(model, ids.to(dev), attn.to(dev), rows_t.to(dev), cols_t.to(dev)).float()
        target = ids[rows_t, cols_t + 1].to(dev)
        tok_lp = (logits.gather(-1, target.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)).cpu()
        for j, lo, hi in owner:
            out[j] = (float(tok_lp[lo:hi].sum()), int(hi - lo))
    return out


@torch.inference_mode()
def last_token_features(model, tokenizer, texts: list[str], batch_size: int = 16, max_length: int = 512) -> np.ndarray:
    """Final-layer hidden state at each text's last token (MAUVE's GPT-2 featurisation) [n, hidden]."""
    dev = model_device(model)
    feats = []
    pad = tokenizer_pad_id(tokenizer)
    for s in range(0, len(texts), batch_size):
        enc = [
            tokenizer(t, add_special_tokens=False)["input_ids"][-max_length:] or [pad]
            for t in texts[s : s + batch_size]
        ]
        ids, attn = right_pad(enc, pad)
        out = model(input_ids=ids.to(dev), attention_mask=attn.to(dev), output_hidden_states=True)
        h = out.hidden_states[-1].float().cpu()
        last = attn.sum(1) - 1
        feats.append(h[torch.arange(len(enc)), last].numpy())
    return np.concatenate(feats) if feats else np.empty((0, 0), np.float32)
