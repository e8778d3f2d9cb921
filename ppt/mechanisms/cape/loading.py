"""Cape's parameter checks, its context model's loading and the logit bound's calibration.

Why its own module: these run once, at construction, before anything is perturbed (a bad parameter
fails before a model is loaded), and none of them is part of the per-batch pipeline.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ppt.lm.context import kind_from_name, model_kind
from ppt.mechanisms.cape import utility as cu
from ppt.mechanisms.policy import Policy

CALIBRATION_PROMPTS = (
    "The committee will meet on Tuesday to review the annual budget.",
    "She bought fresh bread and a bottle of milk at the corner shop.",
    "Heavy rain caused delays on several train lines this morning.",
    "Please send me the report before the end of the week.",
    "The museum opened a new exhibition about ancient maps and old globes.",
)
CALIBRATION_QUANTILE = 0.999
CONTEXTS = ("auto", "causal", "masked")
BATCHING = ("auto", "record", "mixed")


def positive_int(name: str, value: Any) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive integer (got {value!r})") from None
    if v < 1 or v != value:
        raise ValueError(f"{name} must be a positive integer (got {value!r})")
    return v


def check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)} (got {value!r})")
    return value


def merge_policy(default: Policy, policy: Policy | dict | None) -> Policy:
    """A Policy from ``policy``: the default when None, the default's fields overridden by a dict's
    non-None values."""
    if policy is None:
        return default
    if isinstance(policy, Policy):
        return policy
    merged = dataclasses.asdict(default)
    merged.update({k: v for k, v in dict(policy).items() if v is not None})
    return Policy(**merged)


def _to_dtype(lm, dtype: str | None):
    if dtype is None:
        return lm
    from ppt.models.device import resolve_dtype

    return lm.to(resolve_dtype(dtype, next(lm.parameters()).device))


def load_context_model(model: Any, context: str, device: str, dtype: str | None):
    """(model, tokenizer, name, kind) from a name/path or a loaded (model, tokenizer) pair; kind is
    "causal" or "masked" (``context``, or told from the model / its name when "auto")."""
    if isinstance(model, (tuple, list)) and len(model) == 2:
        lm, tok = model
        kind = model_kind(lm) if context == "auto" else context
        if kind is None:
            raise ValueError(
                f"cannot tell whether {type(lm).__name__} is causal or masked; pass context='causal' or 'masked'"
            )
        name = getattr(lm.config, "_name_or_path", "") or type(lm).__name__
        if device != "auto":
            from ppt.models import resolve_device

            lm = lm.to(resolve_device(device))
        return _to_dtype(lm, dtype), tok, name, kind
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"model must be a name/path or a (model, tokenizer) pair (got {model!r})")
    kind = kind_from_name(model) if context == "auto" else context
    import ppt.models as models

    if kind == "causal":
        lm, tok = models.load_causal_lm(model, device=device, dtype=dtype)
    else:
        lm, tok = models.load_masked_lm(model, device=device)
        lm = _to_dtype(lm, dtype)
    return lm, tok, model, kind


def default_dtype(lm, dtype: str | None):
    """(model, how its dtype was chosen): with no ``dtype`` given, a context model on CUDA runs in
    bfloat16 (float16 where the GPU lacks bf16; the forward pass and both products ~2x faster, utilities
    within ~1e-2 of float32) and one on the CPU keeps its own (float32 for the packaged models)."""
    if dtype is not None:
        return lm, "given"
    if next(lm.parameters()).device.type == "cuda":
        return _to_dtype(lm, "auto"), "default: bfloat16 on CUDA (float16 without bf16 support)"
    return lm, "default: the model's own on CPU"


BOUND_DIGITS = 4  # significant digits B is rounded to


@torch.inference_mode()
def calibrate_logit_bound(tokenizer, lm) -> float:
    """B = the 99.9% quantile of |candidate logits| at every position of the calibration prompts
    (``tokenizer``: an :class:`~ppt.spaces.tokenizers.HFTokenizer`; ``lm``: a ContextModel), rounded to
    ``BOUND_DIGITS`` significant digits.

    Why one thread and the rounding: B enters every record's sampling and the stamp's signature, so it
    must not depend on where it is computed. The forward pass's float reductions depend on torch's
    intra-op thread count (``--workers N`` gives each worker cores/N threads): computed on 2 threads and
    on 1, B differed in the 6th digit (22.9494 and 22.9493), so records of one run carried two
    signatures. On the CPU the calibration runs on one thread, and the rounding absorbs what other
    kernels (another CPU, a GPU) change in the last bits."""
    from ppt import parallel

    ids = [tokenizer.tokenize(p).ids for p in CALIBRATION_PROMPTS]
    on_cpu = torch.device(getattr(lm, "device", "cpu")).type == "cpu"
    with parallel.one_thread() if on_cpu else contextlib.nullcontext():
        feats = lm.features(ids, [np.arange(len(i)) for i in ids])
        logits = lm.candidate_logits(feats)
        bound = cu.calibrate_bound(logits.abs(), CALIBRATION_QUANTILE)
    if not math.isfinite(bound) or bound <= 0:
        raise ValueError(f"logit bound calibration failed (got {bound}); pass logit_bound explicitly")
    return float(f"{bound:.{BOUND_DIGITS}g}")


__all__ = [
    "BATCHING",
    "CALIBRATION_PROMPTS",
    "CALIBRATION_QUANTILE",
    "CONTEXTS",
    "calibrate_logit_bound",
    "check_choice",
    "default_dtype",
    "load_context_model",
    "merge_policy",
    "positive_int",
]
