"""A content fingerprint of a loaded model's weights, for stamps and cache keys.

Why: a name such as ``smollm2`` or a local path does not say which weights produced an output; a stamp
that names the model must let a reader tell two models apart, as the space hash does for spaces. Hashing
every byte of a 135M-parameter model costs a second of start-up, so the fingerprint hashes each
parameter's name, shape, dtype, its float64 sum (9 significant digits) and a strided sample of at most
1,024 values: re-training, another quantization, dtype or checkpoint changes it; loading the same
weights in the same dtype again (GGUF or its converted safetensors) does not.
"""

from __future__ import annotations

import hashlib
from typing import Any

SAMPLE = 1024


def weights_fingerprint(model: Any) -> str:
    """Hex sha256 over the parameters (and buffers) of a torch module; see the module docstring."""
    import torch

    h = hashlib.sha256()
    with torch.no_grad():
        named = list(model.named_parameters()) + list(model.named_buffers())
        for name, t in sorted(named, key=lambda kv: kv[0]):
            flat = t.detach().reshape(-1)
            step = max(1, flat.numel() // SAMPLE)
            sample = flat[::step][:SAMPLE].to("cpu", torch.float64)
            h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|".encode())
            h.update(f"{float(flat.double().sum()):.9g}|".encode())
            h.update(sample.numpy().tobytes())
    return h.hexdigest()


__all__ = ["weights_fingerprint"]
