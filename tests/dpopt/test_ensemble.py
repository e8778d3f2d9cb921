"""The KV-cached ensemble decode gives the logits of re-encoding every prompt with its prefix."""

from __future__ import annotations

import torch

from ppt.dpopt.ensemble import EnsembleDecoder, reencode_logits, sample_votes


def test_kv_cache_matches_reencoding(tiny_lm):
    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(str(tiny_lm), device="cpu", dtype="float32")
    prompts = [
        tok(t)["input_ids"] for t in ("The quick brown fox", "A patient", "Please summarize this note about a payment")
    ]
    dec = EnsembleDecoder(model, tok, prompts)
    prefix: list[int] = []
    for step in range(4):
        ref = reencode_logits(model, tok, prompts, prefix)
        assert torch.allclose(dec.logits, ref, atol=1e-4), step
        token = int(dec.logits[0].argmax())
        prefix.append(token)
        dec.append(token)


def test_votes_are_greedy_at_temperature_zero():
    logits = torch.tensor([[0.0, 3.0, 1.0], [5.0, 0.0, 0.0]])
    assert sample_votes(logits, 0.0, torch.Generator()).tolist() == [1, 0]
    g = torch.Generator().manual_seed(0)
    assert sample_votes(logits, 1.0, g).shape == (2,)
