"""Batched text generation on a local causal LM (the local LanguageModel), shared by `ppt extract`,
`ppt query --backend local`, `ppt serve` and the LLM attack.

What it gets right, so callers do not have to:
- chat template when the tokenizer has one (else the plain prompt; several chat turns fall back to
  ``role: content`` lines);
- left padding with the attention mask transformers needs, prompts tokenized once and grouped by
  length into micro-batches so little compute goes to padding;
- sampling from per-record generators: a record's sample depends on its own generator only (derive it
  with ``ppt.rng.record_torch_generator(seed, id, stream)``), not on batch size or neighbours. Temperature 0
  is greedy decoding;
- stop strings (cut before the stop, OpenAI-style), EOS ids from the model and tokenizer, a
  ``finish_reason`` ("stop" or "length") and token usage per completion;
- prompts longer than the model's context come back as RecordError, not as a crash;
- one SamplingParams per prompt: one batched decode per distinct params;
- the decode loop is ppt.lm.decode (prefill, then one forward pass and one batched pick per token, all
  on the model's device; a static KV cache, optionally a compiled step on CUDA), bfloat16 weights and
  GPU-sized batches by default on CUDA; ``decoder="generate"`` keeps the previous path (transformers'
  ``generate``) as the reference the bench compares against.

    gen = LocalGenerator.load("smollm2")
    outs = gen.generate([[{"role": "user", "content": "Hi"}]], SamplingParams(max_new_tokens=20))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ppt.io import RecordError
from ppt.lm.base import (  # the protocol's types live beside the protocol; re-exported here
    Completion,
    Prompt,
    SamplingParams,
    context_length,
    ensure_pad_token,
    eos_ids,
    gathered_logits,
    length_batches,
    model_device,
    pad_id,
)

DECODERS = ("loop", "generate")  # ppt.lm.decode's loop; transformers' generate (the reference path)
CPU_BATCH, GPU_BATCH = 8, 256


@dataclass
class _Encoded:
    index: int
    ids: list[int]
    error: RecordError | None = None
    generator: Any = None
    out: Completion | None = field(default=None)


class LocalGenerator:
    """A loaded causal LM + tokenizer that turns prompts into completions in batches."""

    can_score = True  # score() / logits_at() work (logprobs in ppt serve)

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str | None = None,
        batch_size: int | None = 8,
        decoder: str = "loop",
        static_cache: bool | None = None,
        compile: bool = False,
    ) -> None:  # noqa: A002
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {', '.join(DECODERS)} (got {decoder!r})")
        self.model, self.tokenizer = model, tokenizer
        self.batch_size = default_batch_size(model_device(model)) if batch_size is None else batch_size
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.decoder = decoder
        # static KV cache: fixed shapes (what a compiled step needs) and no per-step copy of the growing
        # cache (1.7x tokens per CPU second on the tiny bench); None = on, falling back to the dynamic
        # cache for a model whose cache layout StaticCache does not handle
        self.static_cache = True if static_cache is None else bool(static_cache)
        self._static_auto = static_cache is None
        self.compile = bool(compile)
        self._step_forward: Any = None
        self._cache_pool: dict = {}  # static KV caches reused between batches (see ppt.lm.decode)
        self._min_cache_len = 0
        self.name = name or getattr(getattr(model, "config", None), "_name_or_path", None) or type(model).__name__
        tokenizer.padding_side = "left"
        ensure_pad_token(tokenizer)
        self.eos_ids = eos_ids(model, tokenizer)
        self.context_length = context_length(model)

    @classmethod
    def load(
        cls, name: str, device: Any = "auto", dtype: Any = None, batch_size: int | None = 8, **options: Any
    ) -> LocalGenerator:
        """Load a causal LM by alias (``smollm2``), local path or hub id (see ppt.models).

        On CUDA, ``dtype`` None means bfloat16 (float16 where bf16 is unsupported) and ``batch_size``
        None a GPU-sized batch (``default_batch_size``); ``options`` go to the constructor.
        """
        from ppt.models import load_causal_lm
        from ppt.models.device import resolve_device

        if dtype is None and resolve_device(device).type == "cuda":
            dtype = "auto"
        model, tok = load_causal_lm(name, device=device, dtype=dtype)
        return cls(model, tok, name=name, batch_size=batch_size, **options)

    @property
    def device(self) -> Any:
        return model_device(self.model)

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def describe(self) -> dict:
        """What a stamp says about the model."""
        dtype = next(self.model.parameters()).dtype
        return {
            "model": self.name,
            "device": str(self.device),
            "dtype": str(dtype).removeprefix("torch."),
            "chat_template": self.has_chat_template,
        }

    # ------------------------------------------------------------------ prompts

    def render(self, prompt: Prompt) -> tuple[str, bool]:
        """The text fed to the model and whether the tokenizer should add special tokens."""
        if isinstance(prompt, str):
            return prompt, True
        messages = [{"role": str(m.get("role", "user")), "content": content_text(m.get("content"))} for m in prompt]
        if self.has_chat_template:
            text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            return text, False
        if len(messages) == 1 and messages[0]["role"] == "user":
            return messages[0]["content"], True
        lines = [f"{m['role']}: {m['content']}" for m in messages]
        return "\n\n".join(lines) + "\n\nassistant:", True

    def count_tokens(self, prompt: Prompt) -> int:
        text, special = self.render(prompt)
        return len(self.tokenizer(text, add_special_tokens=special)["input_ids"])

    # ------------------------------------------------------------------ generation

    def generate(
        self,
        prompts: Sequence[Prompt],
        params: SamplingParams | Sequence[SamplingParams],
        generators: Sequence[Any] | None = None,
    ) -> list[Completion | RecordError]:
        """One Completion (or RecordError for a prompt that does not fit) per prompt, in order.

        ``params``: one SamplingParams for every prompt, or one per prompt (each distinct value is
        one ``generate`` call, so a record's output never depends on its neighbours' params).
        ``generators``: one CPU ``torch.Generator`` per prompt (sampling only); None draws fresh ones
        from OS entropy.
        """
        if isinstance(params, SamplingParams):
            return self._generate(prompts, params, generators)
        out: list[Any] = [None] * len(prompts)
        groups: dict[SamplingParams, list[int]] = {}
        for i, p in enumerate(params):
            groups.setdefault(p, []).append(i)
        for p, idx in groups.items():
            res = self._generate(
                [prompts[i] for i in idx], p, None if generators is None else [generators[i] for i in idx]
            )
            for i, r in zip(idx, res):
                out[i] = r
        return out

    def score(self, pairs: list[tuple[list[int], list[int]]], batch_size: int = 16) -> list[tuple[float, int]]:
        """(sum log P(continuation | prefix), tokens scored) per token-id pair (ppt.lm.score)."""
        from ppt.lm.score import continuation_logprobs

        return continuation_logprobs(self.model, pairs, pad_id=pad_id(self.tokenizer), batch_size=batch_size)

    def logits_at(self, input_ids: Any, attn: Any, rows: Any, cols: Any) -> Any:
        """Logits [n, V] at positions (rows, cols) of a padded batch."""
        return gathered_logits(self.model, input_ids, attn, rows, cols)

    def _generate(
        self,
        prompts: Sequence[Prompt],
        params: SamplingParams,
        generators: Sequence[Any] | None,
    ) -> list[Completion | RecordError]:
        import torch

        from ppt.rng import record_torch_generator

        items: list[_Encoded] = []
        for i, prompt in enumerate(prompts):
            text, special = self.render(prompt)
            ids = self.tokenizer(text, add_special_tokens=special)["input_ids"]
            item = _Encoded(i, list(ids))
            if not item.ids:
                item.error = RecordError("empty_prompt", "the prompt encodes to zero tokens")
            elif self.context_length and len(item.ids) + params.max_new_tokens > self.context_length:
                item.error = RecordError(
                    "prompt_too_long",
                    f"prompt has {len(item.ids)} tokens; with max_new_tokens {params.max_new_tokens} it exceeds "
                    f"the model's context of {self.context_length}",
                )
            if params.temperature > 0:
                item.generator = generators[i] if generators is not None else record_torch_generator(None, i)
            items.append(item)
        todo = [it for it in items if it.error is None]
        # a compiled step: one cache shape for every batch of the call (else one compile per prompt length)
        self._min_cache_len = (
            max((len(it.ids) for it in todo), default=0) + params.max_new_tokens
            if self._compiled_step() is not None
            else 0
        )
        with torch.inference_mode():
            for batch in length_batches([len(it.ids) for it in todo], self.batch_size):
                chunk = [todo[j] for j in batch]
                if self.decoder == "generate":
                    self._generate_chunk_reference(chunk, params)
                else:
                    self._generate_chunk(chunk, params)
        return [it.error if it.error is not None else it.out for it in items]  # type: ignore[misc]

    def _generate_chunk(self, chunk: list[_Encoded], params: SamplingParams) -> None:
        from ppt.lm.decode import InverseCDFSampler, decode, greedy

        batch = self.tokenizer.pad({"input_ids": [it.ids for it in chunk]}, padding=True, return_tensors="pt")
        device = self.device
        input_ids = batch["input_ids"].to(device)
        attention_mask = batch["attention_mask"].to(device)
        pick: Any = greedy
        if params.temperature > 0:
            pick = InverseCDFSampler.for_records(
                params.temperature, params.top_p, [it.generator for it in chunk], params.max_new_tokens, device
            )
        stopper = _StopStrings(self.tokenizer, params.stop, 0, len(chunk)) if params.stop else None
        step = self._compiled_step()

        def run() -> list[list[int]]:
            return decode(
                self.model,
                input_ids,
                attention_mask,
                max_new_tokens=params.max_new_tokens,
                eos_ids=self.eos_ids,
                pad_id=pad_id(self.tokenizer),
                pick=pick,
                stop_rows=None if stopper is None else (lambda tokens, _t: stopper(tokens, None)),
                static_cache=self.static_cache,
                step_forward=step,
                check_every=1 if device.type == "cpu" else 8,
                cache_pool=self._cache_pool,
                min_cache_len=self._min_cache_len,
            ).tolist()

        try:
            new = run()
        except (TypeError, ValueError, NotImplementedError, AttributeError) as e:
            if not (self.static_cache and self._static_auto):
                raise
            from ppt.log import logger

            logger.debug(f"static KV cache unavailable for this model ({type(e).__name__}); using the dynamic cache")
            self.static_cache, self._cache_pool, step = False, {}, None
            if stopper is not None:
                stopper = _StopStrings(self.tokenizer, params.stop, 0, len(chunk))
            new = run()  # the sampler's uniforms are indexed by step: the same draws serve the retry
        self._finish(chunk, new, params, stopper)

    def _compiled_step(self) -> Any:
        """``model.forward`` under torch.compile (CUDA graphs) for one-token steps, when asked and on CUDA."""
        if not (self.compile and self.static_cache and self.device.type == "cuda"):
            return None
        if self._step_forward is None:
            import torch

            self._step_forward = torch.compile(self.model.forward, mode="reduce-overhead", dynamic=False)
        return self._step_forward

    def _generate_chunk_reference(self, chunk: list[_Encoded], params: SamplingParams) -> None:
        """The previous implementation (transformers' ``generate`` with a per-row CPU sampler), kept as
        the reference that bench/extract.py measures against; greedy outputs equal the loop's."""
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        batch = self.tokenizer.pad({"input_ids": [it.ids for it in chunk]}, padding=True, return_tensors="pt")
        input_ids = batch["input_ids"].to(self.device)
        attention_mask = batch["attention_mask"].to(self.device)
        width = input_ids.shape[1]
        config = GenerationConfig(
            max_new_tokens=params.max_new_tokens,
            do_sample=False,  # sampling happens in _RowSampler, from per-record generators
            num_beams=1,
            repetition_penalty=1.0,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=self.eos_ids or None,
        )
        processors = LogitsProcessorList()
        if params.temperature > 0:
            processors.append(_RowSampler(params.temperature, params.top_p, [it.generator for it in chunk]))
        stopper = _StopStrings(self.tokenizer, params.stop, width, len(chunk)) if params.stop else None
        criteria = StoppingCriteriaList([stopper] if stopper else [])
        out = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            generation_config=config,
            logits_processor=processors,
            stopping_criteria=criteria,
        )
        self._finish(chunk, out[:, width:].tolist(), params, stopper)

    def _finish(
        self, chunk: list[_Encoded], new: list[list[int]], params: SamplingParams, stopper: _StopStrings | None
    ) -> None:
        """Cut each row at its first EOS / stop string and decode it into the record's Completion."""
        eos = set(self.eos_ids)
        for row, it in enumerate(chunk):
            tokens = new[row]
            n, reason = len(tokens), "length"
            for j, t in enumerate(tokens):
                if t in eos:
                    n, reason = j + 1, "stop"
                    break
            if stopper is not None and stopper.stopped_at[row] is not None and stopper.stopped_at[row] < n:
                n, reason = stopper.stopped_at[row], "stop"
            text = self.tokenizer.decode(tokens[:n], skip_special_tokens=True)
            cut = _first_stop(text, params.stop)
            if cut is not None:
                text, reason = text[:cut], "stop"
            it.out = Completion(text=text, prompt_tokens=len(it.ids), completion_tokens=n, finish_reason=reason)


# ---------------------------------------------------------------------- helpers


def default_batch_size(device: Any) -> int:
    """Prompts per forward pass when the caller leaves it open: a GPU needs hundreds of rows per step to
    be busy with a small model; a CPU gains little beyond a few."""
    return GPU_BATCH if getattr(device, "type", str(device)) == "cuda" else CPU_BATCH


def content_text(content: Any) -> str:
    """Chat content: a string, or OpenAI's list of parts (text parts are joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return str(content)


def _first_stop(text: str, stops: Sequence[str]) -> int | None:
    cuts = [i for i in (text.find(s) for s in stops) if i >= 0]
    return min(cuts) if cuts else None


class _RowSampler:
    """Logits processor that samples each row from its own generator and returns scores whose argmax is
    that sample, so greedy decoding inside ``generate`` emits it. Temperature then top-p (nucleus)."""

    def __init__(self, temperature: float, top_p: float, generators: list[Any]) -> None:
        self.temperature, self.top_p, self.generators = temperature, top_p, generators

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        probs = torch.softmax(scores.float() / self.temperature, dim=-1)
        if self.top_p < 1.0:
            sorted_p, order = probs.sort(dim=-1, descending=True)
            before = sorted_p.cumsum(dim=-1) - sorted_p  # mass strictly above each token
            sorted_p = sorted_p.masked_fill(before >= self.top_p, 0.0)  # the top token always stays
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
        probs = probs.cpu()
        picks = [int(torch.multinomial(probs[r], 1, generator=g)) for r, g in enumerate(self.generators)]
        out = torch.full_like(scores, float("-inf"))
        out[torch.arange(len(picks)), torch.tensor(picks, device=scores.device)] = 0.0
        return out


class _StopStrings:
    """Stopping criterion: a row is done once its generated text contains a stop string."""

    def __init__(self, tokenizer: Any, stops: Sequence[str], prompt_width: int, rows: int) -> None:
        self.tokenizer, self.stops, self.width = tokenizer, list(stops), prompt_width
        self.stopped_at: list[int | None] = [None] * rows

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        generated = input_ids[:, self.width :].tolist()
        for row, tokens in enumerate(generated):
            if self.stopped_at[row] is not None:
                done[row] = True
                continue
            if _first_stop(self.tokenizer.decode(tokens, skip_special_tokens=True), self.stops) is not None:
                self.stopped_at[row] = len(tokens)
                done[row] = True
        return done
