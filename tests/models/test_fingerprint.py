"""The weights fingerprint names the weights, not the name: stable across reloads, changed by any edit."""

from __future__ import annotations

import torch

from ppt.models.fingerprint import weights_fingerprint
from ppt.testing import tiny_llama


def test_same_weights_same_fingerprint_and_edits_change_it():
    a, b = tiny_llama(64, seed=0), tiny_llama(64, seed=0)
    fa = weights_fingerprint(a)
    assert fa == weights_fingerprint(b) and len(fa) == 64
    assert weights_fingerprint(tiny_llama(64, seed=1)) != fa  # another checkpoint
    with torch.no_grad():
        p = dict(a.named_parameters())["model.layers.0.mlp.up_proj.weight"]
        p.add_(1e-4 * torch.randn_like(p))  # a fine-tuning step
    assert weights_fingerprint(a) != fa
    assert weights_fingerprint(b.to(torch.bfloat16)) != fa  # another dtype
