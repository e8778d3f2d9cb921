"""Word importance K_w, privacy O_w and the protected share: ProSan's scores (papers/prosan.txt, Sec. 4-5.1).

Why its own module: these are pure tensor functions of a causal LM and token-to-word maps, tested against
hand-computed values on a tiny random LM.

* Task loss L(q, y): mean negative log-likelihood of a response y given the prompt q. y is the LM's own
  greedy continuation of ``response_tokens`` tokens (the paper scores against the LLM's output); with
  ``response_tokens=0``, or when the continuation is empty, y is the prompt itself (its LM loss).
* Importance: g_t = dL/de_t, the gradient w.r.t. token t's input embedding; g_w = mean of g_t over the
  word's tokens (Eq. 3); K_w = ||g_w||_2, min-max normalised over the prompt's words (Eq. 4).
* Self-information: I_w = sum over the word's tokens of -ln p(t | t_<t) (nats; a BOS token is prepended
  when the tokenizer has one so the first word is scored too); O_w = I_w min-max normalised.
* Prompt entropy H = mean I_w over the prompt's words; protected share gamma = min(1, lambda * sigmoid(H)) (Eq. 8).

All records of a batch go through one padded forward and backward pass (their losses are summed, so each
record's gradients are its own); ``per_record`` runs them one at a time so seeded output never depends on
batch rounding (the token pipeline's reproducibility contract).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass
class WordScores:
    """One record's scores, per word (words without an LM token get 0)."""

    importance: np.ndarray  # K_w in [0, 1]
    privacy: np.ndarray  # O_w in [0, 1]
    self_info: np.ndarray  # I_w in nats
    entropy: float  # H: mean I_w


def minmax(x: torch.Tensor) -> torch.Tensor:
    """(x - min) / (max - min); all zeros when the range is 0 (the paper's formula is undefined there)."""
    if x.numel() == 0:
        return x
    lo, hi = x.min(), x.max()
    rng = hi - lo
    return (x - lo) / rng if float(rng) > 0 else torch.zeros_like(x)


def protected_share(lam: float, entropy: float) -> float:
    """gamma = min(1, lambda * sigmoid(H))."""
    return min(1.0, lam / (1.0 + math.exp(-entropy)))


def n_protected(gamma: float, n_candidates: int) -> int:
    """How many candidate words to protect: ceil(gamma * n), rounding toward protection."""
    return min(n_candidates, math.ceil(gamma * n_candidates - 1e-9))


def token_words(offsets: list[tuple[int, int]], char_word: np.ndarray) -> np.ndarray:
    """The word of each LM token: the word holding the token's last character (-1: none, e.g. whitespace)."""
    if not offsets:
        return np.empty(0, np.int64)
    ends = np.fromiter((e for _, e in offsets), dtype=np.int64, count=len(offsets))
    starts = np.fromiter((s for s, _ in offsets), dtype=np.int64, count=len(offsets))
    last = np.clip(ends - 1, 0, max(len(char_word) - 1, 0))
    out = char_word[last] if len(char_word) else np.full(len(offsets), -1)
    return np.where(ends > starts, out, -1).astype(np.int64)


def char_word_map(lead: list[str], core: list[str], is_word: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(word index of every character (-1 outside words), piece index of every word)."""
    n = sum(len(a) + len(b) for a, b in zip(lead, core))
    out = np.full(n, -1, np.int64)
    pieces = np.flatnonzero(is_word)
    pos = 0
    w = 0
    for i, (a, b) in enumerate(zip(lead, core)):
        pos += len(a)
        if is_word[i]:
            out[pos : pos + len(b)] = w
            w += 1
        pos += len(b)
    return out, pieces


def greedy_responses(model: Any, prompts: list[list[int]], n: int, pad: int, eos: list[int]) -> list[list[int]]:
    """The LM's greedy continuation (up to ``n`` tokens, cut at EOS) of each prompt; left-padded batch."""
    if n <= 0 or not prompts:
        return [[] for _ in prompts]
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    attn = torch.zeros_like(ids)
    for r, p in enumerate(prompts):
        ids[r, width - len(p) :] = torch.as_tensor(p, dtype=torch.long)
        attn[r, width - len(p) :] = 1
    dev = next(model.parameters()).device
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids.to(dev),
            attention_mask=attn.to(dev),
            max_new_tokens=n,
            do_sample=False,
            pad_token_id=pad,
            eos_token_id=eos or None,
        )
    res = []
    stop = set(eos)
    for row in out[:, width:].cpu().tolist():
        cut = next((i for i, t in enumerate(row) if t in stop), len(row))
        res.append(row[:cut])
    return res


def score_batch(
    model: Any,
    prompts: list[list[int]],
    responses: list[list[int]],
    words: list[np.ndarray],
    n_words: list[int],
    n_prefix: int,
) -> list[WordScores]:
    """Scores of each record from one padded forward/backward pass.

    ``prompts[i]``: token ids (``n_prefix`` BOS ids first); ``words[i]``: word index of each of those
    tokens (-1 for none; the prefix's entries are -1); ``responses[i]``: the response ids (empty: the
    prompt is the target)."""
    dev = next(model.parameters()).device
    seqs = [p + r for p, r in zip(prompts, responses)]
    width = max(len(s) for s in seqs)
    b = len(seqs)
    ids = torch.zeros((b, width), dtype=torch.long)
    attn = torch.zeros((b, width), dtype=torch.long)
    target = torch.zeros((b, width), dtype=torch.bool)  # positions whose token is a loss target
    for i, (p, r) in enumerate(zip(prompts, responses)):
        ids[i, : len(p) + len(r)] = torch.as_tensor(p + r, dtype=torch.long)
        attn[i, : len(p) + len(r)] = 1
        if r:
            target[i, len(p) : len(p) + len(r)] = True
        else:
            target[i, max(1, n_prefix) : len(p)] = True
    ids, attn, target = ids.to(dev), attn.to(dev), target.to(dev)
    emb_layer = model.get_input_embeddings()
    tmask = target[:, 1:]
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    param_dtype = next(model.parameters()).dtype
    # only the input embeddings need gradients: with the weights frozen the backward pass skips every
    # weight gradient (same values for the embeddings' gradient, a large share of the backward's work)
    frozen = [p for p in model.parameters() if p.requires_grad]
    for p in frozen:
        p.requires_grad_(False)
    try:
        grad, nll, per_record = _forward_backward(
            model, ids, attn, target, emb_layer, tmask, base, head, param_dtype, b, width, dev
        )
    finally:
        for p in frozen:
            p.requires_grad_(True)
    info = torch.zeros((b, width), device=dev)
    info[:, 1:] = nll.detach()
    return [
        _word_scores(grad[i, : len(prompts[i])], info[i, : len(prompts[i])], words[i], n_words[i], n_prefix, dev)
        for i in range(b)
    ]


def _forward_backward(model, ids, attn, target, emb_layer, tmask, base, head, param_dtype, b, width, dev):
    """(dL/d(input embeddings), per-token NLL [b, width-1], per-record loss) of one padded batch."""
    with torch.enable_grad():
        emb = emb_layer(ids).detach().float().requires_grad_(True)
        if base is not None and head is not None and base is not model:
            # the vocabulary projection with gradients only where the loss is (the response), the
            # self-information from detached hidden states: the same values, a fraction of the work
            hidden = base(inputs_embeds=emb.to(param_dtype), attention_mask=attn).last_hidden_state[:, :-1]
            rows, cols = torch.nonzero(tmask, as_tuple=True)
            lt = torch.log_softmax(head(hidden[rows, cols]).float(), -1)
            tnll = -lt.gather(-1, ids[rows, cols + 1, None]).squeeze(-1)
            per_record = torch.zeros(b, device=dev).index_add(0, rows, tnll) / tmask.sum(1).clamp_min(1)
            (grad,) = torch.autograd.grad(per_record.sum(), emb)
            with torch.no_grad():
                nll = torch.empty((b, width - 1), device=dev)
                for i in range(b):  # one record at a time: a [width, V] block, not [b, width, V]
                    li = torch.log_softmax(head(hidden[i].detach()).float(), -1)
                    nll[i] = -li.gather(-1, ids[i, 1:, None]).squeeze(-1)
        else:
            logits = model(inputs_embeds=emb.to(param_dtype), attention_mask=attn).logits.float()
            logp = torch.log_softmax(logits[:, :-1], dim=-1)
            nll = -logp.gather(-1, ids[:, 1:, None]).squeeze(-1)  # [b, width-1]: -ln p(token j+1 | <= j)
            per_record = (nll * tmask.float()).sum(1) / tmask.float().sum(1).clamp_min(1.0)
            (grad,) = torch.autograd.grad(per_record.sum(), emb)
    return grad, nll, per_record


def _cache_kw(base: Any) -> str:
    """The keyword of the base model's KV cache (``cache`` in recent transformers, ``past_key_values`` before)."""
    import inspect

    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def respond_and_score(
    model: Any,
    prompts: list[list[int]],
    words: list[np.ndarray],
    n_words: list[int],
    n_prefix: int,
    n_response: int,
    pad: int,
    eos: list[int],
) -> tuple[list[WordScores], list[list[int]]]:
    """(scores, greedy responses) of each record with ONE forward pass over the prompts: the same values as
    :func:`greedy_responses` followed by :func:`score_batch` (to float rounding), without their second
    forward pass over the prompt.

    The prompts go through the base model once, left-padded (position ids from the attention mask, so each
    record's values are its own), with gradients to the input embeddings and a KV cache. The greedy response
    is decoded without gradients from a detached copy of that cache, all records together; then the
    response's tokens go through the model once more on top of the prompt's cache, with gradients (a few
    positions, one read of the weights: decoding inside the autograd graph cost one backward read of the
    weights per token). Each record's loss is the mean NLL of its response cut at EOS (its own prompt's LM
    loss when that is empty); the losses are summed, so each record's gradient is its own. Self-information
    comes from the prompt pass's hidden states (no gradient). Models without a separate base model and head
    fall back to the two-pass path."""
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if base is None or head is None or base is model:
        resp = greedy_responses(model, prompts, n_response, pad, eos)
        return score_batch(model, prompts, resp, words, n_words, n_prefix), resp
    dev = next(model.parameters()).device
    b, lens = len(prompts), [len(p) for p in prompts]
    width = max(lens)
    ids = torch.full((b, width), pad, dtype=torch.long)
    attn = torch.zeros((b, width), dtype=torch.long)
    for r, p in enumerate(prompts):
        ids[r, width - len(p) :] = torch.as_tensor(p, dtype=torch.long)
        attn[r, width - len(p) :] = 1
    ids, attn = ids.to(dev), attn.to(dev)
    pos = (attn.cumsum(1) - 1).clamp_min(0)
    last = torch.as_tensor(lens, device=dev) - 1  # position id of each prompt's last token
    stop = torch.as_tensor(sorted(set(eos)) or [-1], device=dev)
    param_dtype = next(model.parameters()).dtype
    kw = _cache_kw(base)
    from transformers import DynamicCache

    frozen = [p for p in model.parameters() if p.requires_grad]
    for p in frozen:
        p.requires_grad_(False)
    try:
        with torch.enable_grad():
            emb = model.get_input_embeddings()(ids).detach().float().requires_grad_(True)
            cache = DynamicCache(config=model.config)
            hidden = base(
                inputs_embeds=emb.to(param_dtype), attention_mask=attn, position_ids=pos, use_cache=True, **{kw: cache}
            ).last_hidden_state
            first = torch.log_softmax(head(hidden[:, -1]).float(), -1)  # predicts response token 1
            responses = _greedy_from_cache(base, head, kw, cache, first.detach(), attn, last, n_response, pad, stop)
            n_r = [len(x) for x in responses]
            steps = max(n_r)
            y = torch.full((b, max(steps, 1)), pad, dtype=torch.long, device=dev)
            for i, row in enumerate(responses):
                y[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
            logp = first[:, None]
            if steps > 1:  # response tokens 1..steps-1 through the prompt's cache, with gradients
                h = base(
                    input_ids=y[:, : steps - 1],
                    attention_mask=torch.cat([attn, torch.ones((b, steps - 1), dtype=attn.dtype, device=dev)], 1),
                    position_ids=last[:, None] + 1 + torch.arange(steps - 1, device=dev),
                    use_cache=True,
                    **{kw: cache},
                ).last_hidden_state
                logp = torch.cat([logp, torch.log_softmax(head(h).float(), -1)], 1)
            tnll = -logp.gather(-1, y[:, :, None]).squeeze(-1)  # [b, steps]
            target = torch.arange(y.shape[1], device=dev)[None, :] < torch.as_tensor(n_r, device=dev)[:, None]
            loss = (tnll * target).sum(1) / target.sum(1).clamp_min(1)
            empty = [i for i in range(b) if not responses[i]]
            if empty:  # no response: the prompt's own LM loss (targets after the BOS prefix)
                loss = loss.clone()
                for i in empty:
                    lo = width - lens[i]
                    h = hidden[i, lo : width - 1]
                    t = ids[i, lo + 1 : width]
                    nll = -torch.log_softmax(head(h).float(), -1).gather(-1, t[:, None]).squeeze(-1)
                    skip = max(1, n_prefix) - 1
                    loss[i] = nll[skip:].sum() / max(1, len(nll) - skip)
            (grad,) = torch.autograd.grad(loss.sum(), emb)
    finally:
        for p in frozen:
            p.requires_grad_(True)
    with torch.no_grad():
        nll = torch.zeros((b, width), device=dev)  # nll[:, j]: -ln p(token j | < j), left-padded like ids
        for i in range(b):
            lo = width - lens[i]
            li = torch.log_softmax(head(hidden[i, lo : width - 1].detach()).float(), -1)
            nll[i, lo + 1 :] = -li.gather(-1, ids[i, lo + 1 :, None]).squeeze(-1)
    out = [
        _word_scores(grad[i, width - lens[i] :], nll[i, width - lens[i] :], words[i], n_words[i], n_prefix, dev)
        for i in range(b)
    ]
    return out, responses


def _greedy_from_cache(base, head, kw, cache, first, attn, last, n, pad, stop) -> list[list[int]]:
    """Greedy continuation (up to ``n`` tokens, cut at EOS) of every row from a copy of the prompt's KV cache,
    without gradients (``first``: log-probabilities of the first token). A finished row feeds ``pad``."""
    from transformers import DynamicCache

    b, dev = first.shape[0], first.device
    out = torch.full((b, max(n, 0)), -1, dtype=torch.long, device=dev)
    with torch.no_grad():
        copy = DynamicCache(config=base.config)
        for i, layer in enumerate(cache.layers):
            copy.update(layer.keys.detach(), layer.values.detach(), i)
        done = torch.zeros(b, dtype=torch.bool, device=dev)
        am, logp = attn, first
        for j in range(n):
            tok = torch.where(done, torch.full_like(done, pad, dtype=torch.long), logp.argmax(-1))
            done = done | torch.isin(tok, stop)
            out[:, j] = torch.where(done, torch.full_like(tok, -1), tok)
            if bool(done.all()) or j == n - 1:
                break
            am = torch.cat([am, torch.ones((b, 1), dtype=am.dtype, device=dev)], 1)
            h = base(
                input_ids=tok[:, None],
                attention_mask=am,
                position_ids=(last + 1 + j)[:, None],
                use_cache=True,
                **{kw: copy},
            ).last_hidden_state
            logp = head(h[:, -1]).float()
    return [[t for t in row if t >= 0] for row in out.cpu().tolist()]


def _word_scores(grad, info, words, n_w, n_prefix, dev) -> WordScores:
    """One record's K, O, I and H from its token gradients [L, d] and token self-information [L]."""
    w = torch.as_tensor(words, dtype=torch.long, device=dev)
    has = w >= 0
    ww = w[has]
    g = grad[has]
    gsum = torch.zeros((n_w, g.shape[-1]), device=dev).index_add_(0, ww, g)
    cnt = torch.zeros(n_w, device=dev).index_add_(0, ww, torch.ones_like(ww, dtype=torch.float))
    gnorm = (gsum / cnt.clamp_min(1.0)[:, None]).norm(dim=1)
    tok_info = info[has]
    if n_prefix == 0:  # the first token has no prediction: it carries no self-information here
        tok_info = torch.where(torch.nonzero(has).squeeze(1) == 0, torch.zeros_like(tok_info), tok_info)
    inf_w = torch.zeros(n_w, device=dev).index_add_(0, ww, tok_info)
    scored = cnt > 0
    k = torch.zeros(n_w, device=dev)
    o = torch.zeros(n_w, device=dev)
    if bool(scored.any()):
        k[scored] = minmax(gnorm[scored])
        o[scored] = minmax(inf_w[scored])
        h = float(inf_w[scored].mean())
    else:
        h = 0.0
    return WordScores(
        k.cpu().numpy().astype(np.float64),
        o.cpu().numpy().astype(np.float64),
        inf_w.cpu().numpy().astype(np.float64),
        h,
    )


__all__ = [
    "WordScores",
    "char_word_map",
    "greedy_responses",
    "minmax",
    "n_protected",
    "protected_share",
    "respond_and_score",
    "score_batch",
    "token_words",
]
