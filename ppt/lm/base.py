"""What every user of a language model needs from it, in one place: the ``LanguageModel`` interface
(local models, OpenAI-compatible endpoints and test fakes all satisfy it) and the small helpers that
generation, scoring, the masked-LM attack and Cape's context model used to copy: context length,
pad/EOS fallbacks, right padding with attention masks, length-bucketed batches, logits gathered at a
few positions, the BOS prefix and the device a model sits on.

Nothing here imports torch at module import time; ``ppt.lm.door.get_lm`` loads a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

    from ppt.io import RecordError

Messages = list[dict[str, Any]]
Prompt = str | Messages  # a plain prompt (completions) or chat messages


@dataclass(frozen=True)
class SamplingParams:
    """How to decode. ``temperature`` 0 means greedy; ``top_p`` < 1 samples from the nucleus."""

    max_new_tokens: int = 100
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer (got {self.max_new_tokens!r})")
        if not (self.temperature >= 0) or self.temperature != self.temperature or self.temperature > 100:
            raise ValueError(f"temperature must be in [0, 100] (got {self.temperature!r})")
        if not (0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1] (got {self.top_p!r})")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError("stop sequences must be non-empty strings")

    def to_dict(self) -> dict:
        return {
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "stop": list(self.stop),
        }


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" | "length"

    @property
    def usage(self) -> dict:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


class LanguageModel(Protocol):
    """A generative model as the rest of ppt sees it.

    ``generate`` takes plain prompts (str) or chat messages, one SamplingParams for all or one per
    prompt, and optional per-prompt CPU generators (sampling only); it returns a Completion, or a
    RecordError for a prompt that cannot be answered, per prompt in order. ``score`` gives
    (sum log P(continuation | prefix), tokens scored) per token-id pair and ``logits_at`` the logits
    at (row, column) positions of a padded batch; models that only generate (remote endpoints, whose
    ``tokenizer`` is None) raise NotImplementedError there.
    """

    name: str
    tokenizer: Any

    def describe(self) -> dict: ...

    def generate(
        self,
        prompts: Sequence[Prompt],
        params: SamplingParams | Sequence[SamplingParams],
        generators: Sequence[Any] | None = None,
    ) -> list[Completion | RecordError]: ...

    def score(self, pairs: list[tuple[list[int], list[int]]], batch_size: int = 16) -> list[tuple[float, int]]: ...

    def logits_at(self, input_ids: Any, attn: Any, rows: Any, cols: Any) -> torch.Tensor: ...


# ---------------------------------------------------------------------- model facts


def model_device(model: Any) -> torch.device:
    """The device of the model's (first) parameters."""
    return next(model.parameters()).device


def context_length(model: Any, default: int | None = None) -> int | None:
    """The longest sequence the model's positions cover, from its config; ``default`` when unknown."""
    cfg = getattr(model, "config", None)
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(cfg, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    return default


def pad_id(tokenizer: Any, default: int = 0) -> int:
    """The id used to pad batches: the tokenizer's pad token, else ``default`` (masked out anyway)."""
    pid = tokenizer.pad_token_id
    return pid if pid is not None else default


def ensure_pad_token(tokenizer: Any) -> None:
    """Give a tokenizer without a pad token its EOS token as pad (what generation needs)."""
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token is None:
            raise ValueError("tokenizer has neither a pad nor an eos token")
        tokenizer.pad_token = tokenizer.eos_token


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """Every id that ends a generation: the model's generation config's EOS ids, then the tokenizer's."""
    ids: list[int] = []
    cfg = getattr(model, "generation_config", None)
    for value in (getattr(cfg, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None)):
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, int) and v not in ids:
                ids.append(v)
    return ids


def bos_prefix(tokenizer: Any) -> list[int]:
    """[bos] when the tokenizer has one, so the first real token is scored too."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        bos = getattr(tokenizer, "eos_token_id", None)
    return [bos] if bos is not None else []


# ---------------------------------------------------------------------- batching


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by length (stable), cut into batches of ``batch_size``: little padding per batch."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    step = max(1, batch_size)
    return [order[b : b + step] for b in range(0, len(order), step)]


def length_groups(lengths: list[int], items: list[int], budget: int) -> list[list[int]]:
    """Split forward-pass jobs into padded batches of at most ``budget`` tokens, shortest first."""
    groups: list[list[int]] = []
    for length, item in sorted(zip(lengths, items)):  # ascending: the job just added sets the padded length
        if groups and (len(groups[-1]) + 1) * length <= budget:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def right_pad(seqs: Sequence[Sequence[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input ids, attention mask) [n, longest] on CPU: each sequence left-aligned, padded on the right."""
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.as_tensor(s, dtype=torch.long)
        attn[r, : len(s)] = 1
    return ids, attn


def gathered_logits(model: Any, input_ids: Any, attn: Any, rows: Any, cols: Any) -> torch.Tensor:
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
