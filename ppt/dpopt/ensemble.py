"""The n meta-prompts decoded together: one batched prefill, then a KV cache grown by one token per step.

Why: every subset's prompt is fixed for a candidate and all of them receive the same released token, so
step t costs n new positions, not n re-encoded prompts. ``reencode_logits`` is the reference design
(re-encode prompt + prefix every step) that tests compare logits with and the bench times.
"""

from __future__ import annotations

import torch

from ppt.lm.base import model_device, pad_id
from ppt.lm.decode import cache_kwarg, returned_cache


def _left_pad(seqs: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
            attn[i, width - len(s) :] = 1
    return ids, attn


class EnsembleDecoder:
    """Next-token logits of ``n`` prompts that all receive the same appended tokens."""

    def __init__(self, model, tokenizer, prompt_ids: list[list[int]]):
        if not prompt_ids or any(not p for p in prompt_ids):
            raise ValueError("every prompt needs at least one token")
        self.model, self.dev = model, model_device(model)
        ids, attn = _left_pad(prompt_ids, pad_id(tokenizer))
        self.attn = attn.to(self.dev)
        self.pos = (self.attn.cumsum(-1) - 1).clamp_(min=0)
        with torch.inference_mode():
            out = model(input_ids=ids.to(self.dev), attention_mask=self.attn, position_ids=self.pos, use_cache=True)
        self.cache, self.cache_kw = returned_cache(out), cache_kwarg(model)
        self.next_pos = self.pos[:, -1:] + 1
        self.logits = out.logits[:, -1, :].float()

    @torch.inference_mode()
    def append(self, token: int) -> torch.Tensor:
        """Append ``token`` to every prompt; returns the new next-token logits [n, V]."""
        n = self.attn.shape[0]
        step = torch.full((n, 1), int(token), dtype=torch.long, device=self.dev)
        self.attn = torch.cat([self.attn, torch.ones((n, 1), dtype=self.attn.dtype, device=self.dev)], dim=1)
        out = self.model(
            input_ids=step,
            attention_mask=self.attn,
            position_ids=self.next_pos,
            **{self.cache_kw: self.cache},
            use_cache=True,
        )
        self.cache = returned_cache(out)
        self.next_pos = self.next_pos + 1
        self.logits = out.logits[:, -1, :].float()
        return self.logits


@torch.inference_mode()
def reencode_logits(model, tokenizer, prompt_ids: list[list[int]], prefix: list[int]) -> torch.Tensor:
    """Reference design: re-encode every prompt with the whole prefix; last-position logits [n, V]."""
    dev = model_device(model)
    ids, attn = _left_pad([list(p) + list(prefix) for p in prompt_ids], pad_id(tokenizer))
    attn = attn.to(dev)
    pos = (attn.cumsum(-1) - 1).clamp_(min=0)
    return model(input_ids=ids.to(dev), attention_mask=attn, position_ids=pos).logits[:, -1, :].float()


def sample_votes(logits: torch.Tensor, temperature: float, generator) -> torch.Tensor:
    """One token per row from softmax(logits / temperature) (argmax at temperature 0), on CPU: the
    inverse CDF (float64) at one uniform per row from ``generator`` (a numpy generator, 128-bit seeded,
    or a CPU ``torch.Generator``)."""
    from ppt.rng import uniforms

    logits = logits.detach().float().cpu()
    if temperature <= 0:
        return logits.argmax(-1)
    cdf = torch.softmax(logits.double() / temperature, dim=-1).cumsum(-1)
    u = torch.from_numpy(uniforms(generator, logits.shape[0]))[:, None] * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp_(max=logits.shape[-1] - 1)
