"""An optional vLLM runtime for generation (``--runtime vllm``): continuous batching and paged attention
where vLLM is installed (Linux + CUDA). Never required: ppt does not depend on it, and asking for it
without it fails with a message that says how to get it or how to do without.

``VllmGenerator`` answers ``generate`` like LocalGenerator (same prompt rendering through the model's
chat template, same SamplingParams, Completion / RecordError per prompt); each record's sampling seed
is drawn from its own generator, so a seeded record gets the same answer whatever it is batched with
(vLLM's per-request seed). It does not score (no logprobs).

    gen = VllmGenerator.load("smollm2")  # PptError (exit code CONFIG) when vllm is not importable
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

from ppt.io import RecordError
from ppt.lm.base import Completion, Prompt, SamplingParams
from ppt.lm.generate import LocalGenerator


def vllm_available() -> bool:
    """Whether ``import vllm`` would find a package (without importing it: that takes seconds)."""
    try:
        return importlib.util.find_spec("vllm") is not None
    except (ImportError, ValueError):
        return False


def require_vllm() -> None:
    """PptError (CONFIG) unless vllm is importable."""
    from ppt.io import ExitCode, PptError

    if not vllm_available():
        raise PptError(
            "--runtime vllm: the vllm package is not installed",
            ExitCode.CONFIG,
            hint="pip install vllm (Linux with a CUDA GPU), or use --runtime transformers (the default)",
        )


class VllmGenerator(LocalGenerator):
    """A vLLM engine behind LocalGenerator's interface (rendering and errors are LocalGenerator's)."""

    can_score = False

    def __init__(self, llm: Any, tokenizer: Any, *, name: str, context: int | None, eos: list[int]) -> None:
        self.llm, self.model, self.tokenizer, self.name = llm, None, tokenizer, name
        self.batch_size, self.decoder, self.static_cache, self.compile = 0, "vllm", False, False
        tokenizer.padding_side = "left"
        self.eos_ids, self.context_length = eos, context

    @classmethod
    def load(
        cls, name: str, device: Any = "auto", dtype: Any = None, batch_size: int | None = None, **options: Any
    ) -> VllmGenerator:  # noqa: ARG003 - vLLM schedules its own batches
        """Load the model directory that ppt.models resolves ``name`` to into a vLLM engine."""
        require_vllm()
        from ppt.io import ExitCode, PptError
        from ppt.models.device import resolve_device

        if resolve_device(device).type != "cuda":
            raise PptError(
                "--runtime vllm runs on a CUDA GPU only",
                ExitCode.CONFIG,
                hint="use --device cuda, or --runtime transformers on this device",
            )
        from vllm import LLM  # type: ignore[import-not-found]

        from ppt.lm.base import context_length, eos_ids
        from ppt.models import load_causal_lm

        model, tok = load_causal_lm(name, device="cpu")  # resolves aliases, converts GGUF once, checks files
        path = getattr(model, "name_or_path", None) or model.config._name_or_path
        context, eos = context_length(model), eos_ids(model, tok)
        del model
        llm = LLM(model=str(path), tokenizer=str(path), dtype=str(dtype or "auto").removeprefix("torch."), seed=0)
        return cls(llm, tok, name=name, context=context, eos=eos)

    @property
    def device(self) -> Any:
        return "cuda"

    def describe(self) -> dict:
        return {
            "model": self.name,
            "device": "cuda",
            "dtype": "auto",
            "chat_template": self.has_chat_template,
            "runtime": "vllm",
        }

    def score(self, pairs: list[tuple[list[int], list[int]]], batch_size: int = 16) -> list[tuple[float, int]]:
        raise NotImplementedError("the vllm runtime does not score continuations")

    def logits_at(self, input_ids: Any, attn: Any, rows: Any, cols: Any) -> Any:
        raise NotImplementedError("the vllm runtime does not expose logits")

    def _generate(
        self, prompts: Sequence[Prompt], params: SamplingParams, generators: Sequence[Any] | None
    ) -> list[Completion | RecordError]:
        import torch
        from vllm import SamplingParams as VSampling  # type: ignore[import-not-found]

        from ppt.rng import record_torch_generator

        results: list[Any] = [None] * len(prompts)
        todo, requests = [], []
        for i, prompt in enumerate(prompts):
            text, special = self.render(prompt)
            ids = list(self.tokenizer(text, add_special_tokens=special)["input_ids"])
            if not ids:
                results[i] = RecordError("empty_prompt", "the prompt encodes to zero tokens")
                continue
            if self.context_length and len(ids) + params.max_new_tokens > self.context_length:
                results[i] = RecordError(
                    "prompt_too_long",
                    f"prompt has {len(ids)} tokens; with max_new_tokens "
                    f"{params.max_new_tokens} it exceeds the model's context of "
                    f"{self.context_length}",
                )
                continue
            seed = None
            if params.temperature > 0:
                g = generators[i] if generators is not None else record_torch_generator(None, i)
                seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
            requests.append(
                (
                    {"prompt_token_ids": ids},
                    VSampling(
                        max_tokens=params.max_new_tokens,
                        temperature=params.temperature,
                        top_p=params.top_p,
                        stop=list(params.stop) or None,
                        stop_token_ids=self.eos_ids or None,
                        seed=seed,
                    ),
                )
            )
            todo.append((i, len(ids)))
        if requests:
            outs = self.llm.generate([r for r, _ in requests], [s for _, s in requests], use_tqdm=False)
            for (i, n_prompt), out in zip(todo, outs):
                c = out.outputs[0]
                reason = "stop" if c.finish_reason == "stop" else "length"
                results[i] = Completion(
                    text=c.text, prompt_tokens=n_prompt, completion_tokens=len(c.token_ids), finish_reason=reason
                )
        return results
