"""Causal-LM scoring shared by perplexity, zero-shot accuracy and MAUVE features.

``continuation_logprobs`` scores many (prefix, continuation) token-id pairs in right-padded batches:
one forward pass per batch, log-softmax gathered only at the continuation positions.
"""

from __future__ import annotations

import numpy as np
import torch


def _device(model) -> torch.device:
    return next(model.parameters()).device


def context_length(model) -> int:
    cfg = model.config
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        v = getattr(cfg, name, None)
        if isinstance(v, int) and v > 0:
            return v
    return 2048


def gathered_logits(model, input_ids, attn, rows, cols) -> torch.Tensor:
    """Logits [n, V] at positions (rows, cols) only: a pre-hook on the output projection gathers the
    hidden states first, so the vocabulary-sized matrix product runs on n rows, not on every position."""
    proj = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if proj is None:
        return model(input_ids=input_ids, attention_mask=attn).logits[rows, cols]

    def gather(_module, args):
        return (args[0][rows, cols],) + tuple(args[1:])

    handle = proj.register_forward_pre_hook(gather)
    try:
        logits = model(input_ids=input_ids, attention_mask=attn).logits
    except (RuntimeError, ValueError, IndexError):
        handle.remove()
        return model(input_ids=input_ids, attention_mask=attn).logits[rows, cols]
    finally:
        handle.remove()
    return logits[rows, cols] if logits.dim() == 3 else logits


@torch.inference_mode()
def continuation_logprobs(model, pairs: list[tuple[list[int], list[int]]], pad_id: int = 0, batch_size: int = 16) -> list[tuple[float, int]]:
    """(sum of log P(continuation | prefix), number of continuation tokens) per pair.

    Sequences longer than the model's context keep their last ``context`` tokens (the prefix is cut
    from the left; a continuation longer than the context is cut too, and its count says so)."""
    ctx = context_length(model)
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
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    dev = _device(model)
    for b in range(0, len(order), max(1, batch_size)):
        idx = order[b : b + batch_size]
        width = max(len(seqs[j]) for j in idx)
        ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
        attn = torch.zeros((len(idx), width), dtype=torch.long)
        for r, j in enumerate(idx):
            ids[r, : len(seqs[j])] = torch.tensor(seqs[j])
            attn[r, : len(seqs[j])] = 1
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
    dev = _device(model)
    feats = []
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    for s in range(0, len(texts), batch_size):
        enc = [tokenizer(t, add_special_tokens=False)["input_ids"][-max_length:] or [pad] for t in texts[s : s + batch_size]]
        width = max(len(e) for e in enc)
        ids = torch.full((len(enc), width), pad, dtype=torch.long)
        attn = torch.zeros((len(enc), width), dtype=torch.long)
        for r, e in enumerate(enc):
            ids[r, : len(e)] = torch.tensor(e)
            attn[r, : len(e)] = 1
        out = model(input_ids=ids.to(dev), attention_mask=attn.to(dev), output_hidden_states=True)
        h = out.hidden_states[-1].float().cpu()
        last = attn.sum(1) - 1
        feats.append(h[torch.arange(len(enc)), last].numpy())
    return np.concatenate(feats) if feats else np.empty((0, 0), np.float32)


def bos_prefix(tokenizer) -> list[int]:
    """[bos] when the tokenizer has one, so the first real token is scored too."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        bos = getattr(tokenizer, "eos_token_id", None)
    return [bos] if bos is not None else []
