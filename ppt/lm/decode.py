"""The token loop behind LocalGenerator: prefill once, then one forward pass per new token for the whole
left-padded batch, with everything a step needs kept on the model's device.

Why not ``model.generate``: its per-step Python (logits processors, stopping criteria, a host sync to
test for finished rows, and our per-row sampler that moved the probabilities to the CPU every step)
costs more than the forward pass of a small model on a GPU. Here a step is one forward pass, one
batched pick (argmax, or inverse-CDF sampling against uniforms drawn up front from each record's own
generator) and an EOS mask update; the host looks at the batch only every ``check_every`` steps (to
stop early once every row is done) or when stop strings need the text.

On CUDA it can decode into a static KV cache (fixed shapes: the attention mask is allocated at its
final width) and run the one-token step through ``torch.compile`` (CUDA graphs), which is what keeps a
GPU busy with a 135M model; on CPU the dynamic cache is as fast and nothing is compiled.

    tokens = decode(model, ids, mask, max_new_tokens=32, eos_ids=[2], pad_id=0, pick=greedy)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

CACHE_ROUND = 128  # static cache lengths are rounded up to a multiple of this
Pick = Callable[[Any, int], Any]  # (logits [B, V] float, step) -> next token ids [B]


def greedy(logits: Any, step: int) -> Any:  # noqa: ARG001 - same signature as a sampler
    """The most likely token per row (the first on ties, as ``generate``)."""
    return logits.argmax(dim=-1)


class InverseCDFSampler:
    """Temperature then top-p sampling for a batch in a few tensor ops.

    Row r's token at step t is the inverse CDF of its (nucleus-truncated) distribution at ``u[r, t]``,
    one uniform per step drawn up front from that record's own generator, so a record's sample depends
    on its generator and its own logits only: not on batch size, order or neighbours.
    """

    def __init__(self, temperature: float, top_p: float, uniforms: Any) -> None:
        if temperature <= 0:
            raise ValueError("sampling needs temperature > 0 (use greedy)")
        self.temperature, self.top_p, self.uniforms = temperature, top_p, uniforms

    @classmethod
    def for_records(
        cls, temperature: float, top_p: float, generators: Sequence[Any], steps: int, device: Any
    ) -> InverseCDFSampler:
        """Draw ``steps`` uniforms from each generator (CPU torch.Generator) onto ``device``."""
        import torch

        u = torch.stack([torch.rand(steps, generator=g, dtype=torch.float64) for g in generators])
        return cls(temperature, top_p, u.to(device=device, dtype=torch.float32))

    def __call__(self, logits: Any, step: int) -> Any:
        import torch

        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        u = self.uniforms[:, step : step + 1]
        if self.top_p < 1.0:
            # descending, stable (ties keep the lower id first, as argmax); the top token always stays
            sorted_p, order = probs.sort(dim=-1, descending=True, stable=True)
            before = sorted_p.cumsum(dim=-1) - sorted_p
            sorted_p = sorted_p.masked_fill(before >= self.top_p, 0.0)
            return order.gather(-1, _inverse_cdf(sorted_p, u)[:, None])[:, 0]
        return _inverse_cdf(probs, u)


def _inverse_cdf(weights: Any, u: Any) -> Any:
    """Per row, the first index whose cumulative weight exceeds u * total: index i is drawn with
    probability weights[i] / total, and never one of weight 0 (the cumulative sum does not rise there)."""
    import torch

    cdf = weights.cumsum(dim=-1)
    idx = torch.searchsorted(cdf, u * cdf[:, -1:], right=True)[:, 0]
    # u * total can round up to the total: fall back to the last index of positive weight
    width = weights.shape[-1]
    last = width - 1 - (weights > 0).flip(-1).int().argmax(dim=-1)
    return torch.where(idx >= width, last, idx)


def cache_kwarg(model: Any) -> str:
    """The forward argument that takes the KV cache: ``cache`` from transformers 5.x (which deprecates
    ``past_key_values``, removed in 5.40), ``past_key_values`` before."""
    import inspect

    fwd = getattr(type(model), "forward", None) or model
    try:
        params = inspect.signature(fwd).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def returned_cache(out: Any) -> Any:
    """The KV cache a forward pass returned, under either name (see :func:`cache_kwarg`)."""
    cache = out.get("cache") if hasattr(out, "get") else None
    return cache if cache is not None else out.past_key_values


def _static_cache(model: Any, rows: int, total: int, pool: dict | None) -> Any:
    from transformers import StaticCache

    key = (rows, total)
    if pool is not None and key in pool:
        pool[key].reset()
        return pool[key]
    cache = StaticCache(config=model.config, max_cache_len=total)
    if pool is not None:
        if len(pool) >= 2:  # the usual full batch and one short last batch; drop the rest
            pool.pop(next(iter(pool)))
        pool[key] = cache
    return cache


def decode(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    *,
    max_new_tokens: int,
    eos_ids: Sequence[int],
    pad_id: int,
    pick: Pick = greedy,
    stop_rows: Callable[[Any, int], Any] | None = None,
    static_cache: bool = False,
    step_forward: Callable[..., Any] | None = None,
    check_every: int = 1,
    cache_pool: dict | None = None,
    min_cache_len: int = 0,
) -> Any:
    """New token ids [B, max_new_tokens] (on the CPU) for a left-padded batch on the model's device.

    A row that emitted an EOS id (or that ``stop_rows(tokens [B, t], t)`` marks done, a bool [B]
    tensor) gets ``pad_id`` from then on; callers cut each row at its first EOS. The loop ends early
    once every row is done (tested every ``check_every`` steps, and every step when ``stop_rows`` is
    given). ``static_cache`` decodes into a transformers StaticCache sized prompt + max_new_tokens;
    ``step_forward`` (e.g. a compiled ``model.forward``) replaces the model call for one-token steps.
    ``cache_pool`` keeps static caches between calls (by batch rows and length), so a compiled step sees
    the same cache tensors again (CUDA graphs replay on fixed addresses) instead of new allocations;
    ``min_cache_len`` (the longest batch of a call) gives every batch of a call the same shapes, so a
    compiled step is not recompiled for each prompt length.
    """
    import torch

    device = input_ids.device
    rows, width = input_ids.shape
    total = width + max_new_tokens
    if static_cache:
        total = -(-max(total, min_cache_len) // CACHE_ROUND) * CACHE_ROUND  # few distinct shapes to compile
        cache: Any = _static_cache(model, rows, total, cache_pool)
        # the mask at its final width: fixed shapes for every step (future columns are causal-masked)
        mask = torch.ones((rows, total), dtype=attention_mask.dtype, device=device)
        mask[:, :width] = attention_mask
    else:
        from transformers import DynamicCache

        cache = DynamicCache(config=model.config)
        mask = attention_mask
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    cache_position = torch.arange(width, device=device)
    forward = step_forward or model
    kv = cache_kwarg(model)
    eos = torch.tensor(list(eos_ids), dtype=torch.long, device=device)
    out = torch.full((rows, max_new_tokens), pad_id, dtype=torch.long, device=device)
    done = torch.zeros(rows, dtype=torch.bool, device=device)
    logits = model(
        input_ids=input_ids,
        attention_mask=mask[:, :width] if static_cache else mask,
        position_ids=positions,
        **{kv: cache},
        use_cache=True,
        cache_position=cache_position,
        logits_to_keep=1,
    ).logits[:, -1]
    positions = positions[:, -1:]
    for step in range(max_new_tokens):
        nxt = pick(logits, step)
        nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
        out[:, step] = nxt
        if eos.numel():
            done = done | torch.isin(nxt, eos)
        if stop_rows is not None:
            done = done | stop_rows(out[:, : step + 1], step + 1).to(device)
        if step + 1 == max_new_tokens:
            break
        if (stop_rows is not None or (step + 1) % check_every == 0) and bool(done.all()):
            break
        positions = positions + 1
        cache_position = cache_position[-1:] + 1
        if not static_cache:
            mask = torch.cat([mask, mask.new_ones((rows, 1))], dim=1)
        logits = forward(
            input_ids=nxt[:, None],
            attention_mask=mask,
            position_ids=positions,
            **{kv: cache},
            use_cache=True,
            cache_position=cache_position,
        ).logits[:, -1]
    return out.cpu()
