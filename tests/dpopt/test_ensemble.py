"""The KV-cached ensemble decode gives the logits of re-encoding every prompt with its prefix."""

from __future__ import annotations

import pytest
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


def _lm(tiny_lm):
    from ppt.models import load_causal_lm

    return load_causal_lm(str(tiny_lm), device="cpu", dtype="float32")


SHARED = "Your task is to extend the Prefix Text. Use the Perturbed Generation as your primary writing material."
TAILS = ["The quick brown fox", "A patient", "Please summarize this note about a payment", "The clinic is open"]


@pytest.mark.slow(reason="re-encodes every ensemble row with the tiny LM to compare")
def test_lazy_ensemble_matches_reencoding_for_the_rows_asked(tiny_lm):
    """Random participation masks over steps: the logits of the asked rows are those of re-encoding them with
    every released token, whether a row joined early (cache caught up) or late (prefilled with the tokens)."""
    from ppt.dpopt.ensemble import LazyEnsemble, common_prefix

    model, tok = _lm(tiny_lm)
    prompts = [tok(f"{SHARED} {t}")["input_ids"] for t in TAILS] + [tok("No shared start")["input_ids"]]
    prefix = common_prefix(prompts[:4])
    assert len(prefix) > 10
    built = []

    def build(rows):
        built.extend(rows)
        return [prompts[r] for r in rows]

    ens = LazyEnsemble(model, tok, len(prompts), build, prefix=prefix, group_rows=2)
    g = torch.Generator().manual_seed(0)
    released: list[int] = []
    for step in range(6):
        mask = torch.rand(len(prompts), generator=g) < 0.5
        rows = torch.nonzero(mask)[:, 0].tolist()
        got = ens.logits(mask)
        assert got.shape == (len(rows), ens.vocab)
        if rows:
            ref = reencode_logits(model, tok, [prompts[r] for r in rows], released)
            assert torch.allclose(got, ref, atol=1e-4), step
        token = int(torch.randint(3, ens.vocab, (1,), generator=g))
        released.append(token)
        ens.append(token)
    assert sorted(built) == sorted(set(built))  # each prompt built (and encoded) once, when first asked for
    ref = reencode_logits(model, tok, prompts, released)
    assert torch.allclose(ens.logits(list(range(len(prompts)))), ref, atol=1e-4)


def test_lazy_ensemble_encodes_the_shared_prefix_once_and_resumes_with_released_tokens(tiny_lm):
    from ppt.dpopt.ensemble import LazyEnsemble, common_prefix

    model, tok = _lm(tiny_lm)
    prompts = [tok(f"{SHARED} {t}")["input_ids"] for t in TAILS]
    prefix = common_prefix(prompts)
    done = [5, 9]  # a resumed candidate: two tokens already released
    ens = LazyEnsemble(model, tok, 4, lambda rows: [prompts[r] for r in rows], prefix=prefix, tokens=done)
    out = ens.logits([0, 1, 2, 3])
    assert torch.allclose(out, reencode_logits(model, tok, prompts, done), atol=1e-4)
    # the prefix once, then each prompt's own part and the released tokens
    assert ens.prefilled_tokens == len(prefix) + sum(len(p) - len(prefix) + len(done) for p in prompts)
    assert ens.logits([]).shape == (0, ens.vocab) and ens.activated == 4


def test_meta_prompts_start_with_the_run_prefix(tiny_lm):
    """The prefix tune() prefills once is the start of every meta-prompt it builds (successes, errors, none)."""
    from ppt.dpopt.tune import TuneConfig, _MetaPrompts

    model, tok = _lm(tiny_lm)
    texts = ["the quick brown fox", "a patient reports pain", "the clinic is open", "a payment is due"]
    labels = ["negative", "positive", "negative", "positive"]
    meta = _MetaPrompts(model, tok, TuneConfig(labels=["negative", "positive"]), texts, labels)
    prefix = meta.prefix()
    subsets = [[0, 1], [2], [], [3]]
    ids = meta.ids(subsets, [0, 1, 2, 3])
    assert len(prefix) > 20 and all(x[: len(prefix)] == prefix and len(x) > len(prefix) for x in ids)
    assert meta.classified == 4 and meta.ids(subsets, [3]) == ids[3:] and meta.classified == 4  # scored once
