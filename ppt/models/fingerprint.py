"""A content fingerprint of a loaded model's weights, for stamps and cache keys.

Why: a name such as ``smollm2`` or a local path does not say which weights produced an output; a stamp
that names the model must let a reader tell two models apart, as the space hash does for spaces. Hashing
every byte of a 135M-parameter model costs over a second of start-up, and a float64 sum per tensor a
few tenths; so the fingerprint hashes each parameter's name, shape, dtype and a strided sample of at most
4,096 of its values (exact bytes, so it does not depend on thread count or device). Re-training,
another quantization, dtype or checkpoint changes it; loading the same weights again does not. It names
weights; it is not a tamper check (an edit of a few values between samples goes unseen: the cache's
sha256 is the integrity check).
"""

from __future__ import annotations

import hashlib
from typing import Any

SAMPLE = 4096


def weights_fingerprint(model: Any) -> str:
    """Hex sha256 over the parameters (and buffers) of a torch module; see the module docstring."""
    import torch

    h = hashlib.sha256()
    with torch.no_grad():
        named = dict(model.named_parameters())
        named.update(model.named_buffers())
        for name in sorted(named):
            t = named[name]
            flat = t.detach().reshape(-1)
            step = max(1, flat.numel() // SAMPLE)
            sample = flat[::step][:SAMPLE].to("cpu", torch.float32)
            h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|".encode())
            h.update(sample.numpy().tobytes())
    return h.hexdigest()


__all__ = ["weights_fingerprint"]
