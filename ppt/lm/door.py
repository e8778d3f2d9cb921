"""One door to a language model: ``get_lm(name, runtime=...)`` for every caller that needs one.

Why: extract, serve, query's local backend, the InferDPT pipeline and ProSan-lite each loaded their model a
little differently (``LocalGenerator.load``, ``vllm_engine.load_generator``, ``base.get_lm``); a ``--model``
value now has one path to follow (simonw/llm's ``get_model``).
"""

from __future__ import annotations

from typing import Any

RUNTIMES = ("transformers", "vllm")


def get_lm(
    name: str, *, runtime: str = "transformers", device: Any = "auto", dtype: Any = None, batch_size: int | None = None
) -> Any:
    """A local causal LM (alias, path or hub id, see ppt.models) as a ``LanguageModel``: transformers'
    ``LocalGenerator``, or vLLM's ``VllmGenerator`` (PptError, exit 78, where vllm is not installed)."""
    if runtime not in RUNTIMES:
        from ppt.io import ExitCode, PptError

        raise PptError(f"unknown runtime {runtime!r}", ExitCode.USAGE, hint="use transformers or vllm")
    if runtime == "vllm":
        from ppt.lm.vllm_engine import VllmGenerator

        return VllmGenerator.load(name, device=device, dtype=dtype, batch_size=batch_size)
    from ppt.lm.generate import LocalGenerator

    return LocalGenerator.load(name, device=device, dtype=dtype, batch_size=batch_size)


__all__ = ["RUNTIMES", "get_lm"]
