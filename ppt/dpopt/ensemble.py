"""The n meta-prompts of a candidate decoded together, computing only what a query needs.

Why: every subset's meta-prompt is fixed for a candidate and all of them receive the same released token,
but a query reads the votes of the participating subsets only (each with probability ``rate``), and a
candidate often ends after a few queries (at the first bottom). :class:`LazyEnsemble` therefore

* prefills a subset's meta-prompt only when it first participates (a subset that never votes is never
  encoded, nor are its demonstrations classified: ``build`` is called for the new rows only);
* prefills the meta-prompts' shared prefix (the task description and the initial instruction, the same
  for every subset) once, and expands that KV cache over each batch of new rows, which then encode their
  own part only;
* keeps each batch's KV cache across tokens: a batch that falls behind is caught up with the tokens
  released since it last voted (one forward pass for all of them), never re-encoded;
* asks the model for the last position's logits only (``logits_to_keep=1``), not [rows, length, vocab].

The participation mask is drawn before the forward pass, so the votes, and the random numbers drawn for
them, are those of the previous design (``EnsembleDecoder``: every prompt prefilled, every prompt stepped
every token), kept with ``reencode_logits`` as the reference the tests compare logits with and the bench
times.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence

import torch

from ppt.lm.base import model_device, pad_id
from ppt.lm.decode import cache_kwarg, returned_cache

GROUP_ROWS = 32  # rows per prefill batch: bounds the prefill's memory (attention scores, activations)


def _left_pad(seqs: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
            attn[i, width - len(s) :] = 1
    return ids, attn


def _last_only(model) -> dict:
    """``logits_to_keep=1`` where the model's forward takes it: the last position's logits, not all of them."""
    fwd = getattr(type(model), "forward", None) or model
    try:
        ok = "logits_to_keep" in inspect.signature(fwd).parameters
    except (TypeError, ValueError):
        ok = False
    return {"logits_to_keep": 1} if ok else {}


def common_prefix(seqs: Sequence[Sequence[int]]) -> list[int]:
    """The longest common prefix of token id sequences."""
    if not seqs:
        return []
    first = list(seqs[0])
    n = len(first)
    for s in seqs[1:]:
        n = min(n, len(s))
        for i in range(n):
            if s[i] != first[i]:
                n = i
                break
    return first[:n]


class _Group:
    """Rows prefilled together: one KV cache, their attention mask, and how many released tokens it holds."""

    def __init__(self, rows: list[int], cache, cache_kw: str, attn, next_pos, logits, seen: int):
        self.rows, self.cache, self.cache_kw = rows, cache, cache_kw
        self.attn, self.next_pos, self.logits, self.seen = attn, next_pos, logits, seen


class LazyEnsemble:
    """Next-token logits of ``n`` prompts that all receive the same appended tokens, for the rows asked.

    ``build(rows)`` returns the token ids of those rows' prompts (called once per row, when it is first
    asked for). ``prefix``: token ids that every prompt starts with (prefilled once; a prompt that does not
    start with them is encoded whole). ``tokens``: tokens already released (a resumed candidate)."""

    def __init__(
        self,
        model,
        tokenizer,
        n: int,
        build: Callable[[list[int]], list[list[int]]],
        *,
        prefix: Sequence[int] = (),
        tokens: Sequence[int] = (),
        group_rows: int = GROUP_ROWS,
    ):
        if n < 1:
            raise ValueError("an ensemble needs at least one prompt")
        self.model, self.dev, self.n, self.build = model, model_device(model), n, build
        self.pad, self.cache_kw, self.keep = pad_id(tokenizer), cache_kwarg(model), _last_only(model)
        self.tokens: list[int] = [int(t) for t in tokens]
        self.group_rows = max(1, int(group_rows))
        self.groups: list[_Group] = []
        self.where: dict[int, tuple[int, int]] = {}  # row -> (group, index in it)
        self.prefix = [int(t) for t in prefix]
        self.prefix_cache = None
        self.prefilled_tokens = 0  # positions encoded by prefills (prefix included)
        self.stepped_tokens = 0  # positions encoded by catching caches up with released tokens

    # ------------------------------------------------------------------ public

    def append(self, token: int) -> None:
        """Every prompt receives ``token`` (computed lazily, when a row is next asked for)."""
        self.tokens.append(int(token))

    @torch.inference_mode()
    def logits(self, rows: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Next-token logits [len(rows), V] (float32) of ``rows`` (indices, or a bool mask over the n prompts)."""
        rows = self._rows(rows)
        if not rows:
            return torch.zeros((0, self.vocab))
        new = [r for r in rows if r not in self.where]
        if new:
            self._prefill(new)
        out = {}
        for gi in sorted({self.where[r][0] for r in rows}):
            g = self.groups[gi]
            if g.seen < len(self.tokens):
                self._catch_up(g)
        for r in rows:
            gi, j = self.where[r]
            out[r] = self.groups[gi].logits[j]
        return torch.stack([out[r] for r in rows])

    @property
    def vocab(self) -> int:
        """Width of the logits (the output embedding's rows)."""
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        if head is not None and getattr(head, "weight", None) is not None:
            return int(head.weight.shape[0])
        return int(self.model.config.vocab_size)

    @property
    def activated(self) -> int:
        """How many prompts were encoded so far."""
        return len(self.where)

    # ------------------------------------------------------------------ internals

    def _rows(self, rows) -> list[int]:
        if isinstance(rows, torch.Tensor) and rows.dtype == torch.bool:
            if rows.numel() != self.n:
                raise ValueError(f"mask of {rows.numel()} rows for {self.n} prompts")
            return torch.nonzero(rows.cpu(), as_tuple=True)[0].tolist()
        rows = [int(r) for r in (rows.tolist() if isinstance(rows, torch.Tensor) else rows)]
        if any(not 0 <= r < self.n for r in rows):
            raise IndexError("row out of range")
        return rows

    def _forward(self, ids, attn, pos, cache=None):
        kw = {self.cache_kw: cache} if cache is not None else {}
        out = self.model(
            input_ids=ids.to(self.dev), attention_mask=attn, position_ids=pos, use_cache=True, **kw, **self.keep
        )
        return returned_cache(out), out.logits[:, -1, :].float()

    def _prefix_cache(self):
        if self.prefix_cache is None and self.prefix:
            ids = torch.tensor([self.prefix], dtype=torch.long, device=self.dev)
            attn = torch.ones_like(ids)
            pos = torch.arange(len(self.prefix), device=self.dev)[None]
            self.prefix_cache, _ = self._forward(ids, attn, pos)
            self.prefilled_tokens += len(self.prefix)
        return self.prefix_cache

    def _prefill(self, rows: list[int]) -> None:
        built = self.build(list(rows))
        if len(built) != len(rows) or any(not p for p in built):
            raise ValueError("build must return one non-empty prompt per row")
        p = len(self.prefix)
        shared, whole = [], []
        for r, ids in zip(rows, built):
            ids = list(ids)
            (shared if p and len(ids) > p and ids[:p] == self.prefix else whole).append((r, ids + self.tokens))
        for part, use_prefix in ((shared, True), (whole, False)):
            k = -(-len(part) // self.group_rows) if part else 0
            for c in range(k):  # balanced batches of at most group_rows
                chunk = part[c * len(part) // k : (c + 1) * len(part) // k]
                self._prefill_group(chunk, use_prefix)

    def _prefill_group(self, chunk: list[tuple[int, list[int]]], use_prefix: bool) -> None:
        rows = [r for r, _ in chunk]
        p = len(self.prefix) if use_prefix else 0
        ids, attn = _left_pad([s[p:] for _, s in chunk], self.pad)
        attn = attn.to(self.dev)
        pos = (attn.cumsum(-1) - 1).clamp_(min=0) + p
        cache = None
        if use_prefix:
            cache = copy.deepcopy(self._prefix_cache())
            cache.batch_repeat_interleave(len(rows))
            attn = torch.cat([torch.ones((len(rows), p), dtype=attn.dtype, device=self.dev), attn], dim=1)
        cache, logits = self._forward(ids, attn, pos, cache)
        self.prefilled_tokens += int(attn[:, p:].sum())
        g = _Group(rows, cache, self.cache_kw, attn, pos[:, -1:] + 1, logits, len(self.tokens))
        self.groups.append(g)
        for j, r in enumerate(rows):
            self.where[r] = (len(self.groups) - 1, j)

    def _catch_up(self, g: _Group) -> None:
        new = self.tokens[g.seen :]
        k, n = len(new), len(g.rows)
        step = torch.tensor([new] * n, dtype=torch.long, device=self.dev)
        g.attn = torch.cat([g.attn, torch.ones((n, k), dtype=g.attn.dtype, device=self.dev)], dim=1)
        pos = g.next_pos + torch.arange(k, device=self.dev)[None]
        g.cache, g.logits = self._forward(step, g.attn, pos, g.cache)
        g.next_pos, g.seen = g.next_pos + k, len(self.tokens)
        self.stepped_tokens += n * k


class EnsembleDecoder:
    """The previous design (kept as the bench's baseline): every prompt prefilled at once, with the logits
    of every position, then every prompt stepped on each released token."""

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
