"""ppt.lm.decode: the decode loop equals transformers' generate (greedy) on a tiny random Llama, with the
dynamic and the static KV cache and a compiled-style step; the batched sampler draws from the right
distribution (and a test with eps-like mutations of temperature / nucleus fails)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
scipy_stats = pytest.importorskip("scipy.stats")

from ppt.lm.decode import InverseCDFSampler, _inverse_cdf, decode, greedy  # noqa: E402
from ppt.lm.generate import Completion, LocalGenerator, SamplingParams  # noqa: E402
from ppt.rng import record_torch_generator as record_generator  # noqa: E402 - LM sampling takes torch generators
from tests.helpers import LM_PROMPTS as PROMPTS  # noqa: E402

ALPHA = 1e-6


@pytest.fixture(scope="module")
def gen(tiny_lm):
    return LocalGenerator.load(str(tiny_lm), device="cpu", batch_size=8)


def _batch(gen, prompts):
    ids = [gen.tokenizer(gen.render(p)[0], add_special_tokens=gen.render(p)[1])["input_ids"] for p in prompts]
    b = gen.tokenizer.pad({"input_ids": ids}, padding=True, return_tensors="pt")
    return b["input_ids"], b["attention_mask"]


def _outs(outs):
    assert all(isinstance(o, Completion) for o in outs), outs
    return [(o.text, o.completion_tokens, o.finish_reason) for o in outs]


@pytest.mark.parametrize("static_cache", [False, True])
def test_loop_equals_transformers_generate(gen, static_cache):
    ref = LocalGenerator(gen.model, gen.tokenizer, batch_size=8, decoder="generate")
    loop = LocalGenerator(gen.model, gen.tokenizer, batch_size=8, static_cache=static_cache)
    assert loop.static_cache is static_cache and loop.decoder == "loop"
    params = SamplingParams(max_new_tokens=12)
    assert _outs(loop.generate(PROMPTS, params)) == _outs(ref.generate(PROMPTS, params))
    one = LocalGenerator(gen.model, gen.tokenizer, batch_size=1, static_cache=static_cache)
    assert _outs(one.generate(PROMPTS, params)) == _outs(ref.generate(PROMPTS, params))


def test_raw_tokens_equal_generate_and_pad_after_eos(gen):
    ids, mask = _batch(gen, PROMPTS)
    ref = gen.model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=10,
        do_sample=False,
        pad_token_id=gen.tokenizer.pad_token_id,
        eos_token_id=None,
    )[:, ids.shape[1] :]
    with torch.inference_mode():
        dyn = decode(gen.model, ids, mask, max_new_tokens=10, eos_ids=[], pad_id=0)
        sta = decode(gen.model, ids, mask, max_new_tokens=10, eos_ids=[], pad_id=0, static_cache=True)
    assert torch.equal(dyn, ref) and torch.equal(sta, ref)
    # the third token of row 0 is declared an EOS: row 0 pads after it, rows that never emit it do not change
    eos, pad = int(ref[0, 2]), gen.tokenizer.pad_token_id
    assert not (ref == pad).any()
    with torch.inference_mode():
        cut = decode(gen.model, ids, mask, max_new_tokens=10, eos_ids=[eos], pad_id=pad, check_every=4)
    first = (ref == eos).int().argmax(dim=1)
    for r in range(len(PROMPTS)):
        if (ref[r] == eos).any():
            k = int(first[r])
            assert torch.equal(cut[r, : k + 1], ref[r, : k + 1]) and (cut[r, k + 1 :] == pad).all()
        else:
            assert torch.equal(cut[r], ref[r])


def test_every_row_done_ends_the_loop(gen):
    ids, mask = _batch(gen, PROMPTS[:2])
    calls, pad = [], gen.tokenizer.pad_token_id
    with torch.inference_mode():
        out = decode(
            gen.model,
            ids,
            mask,
            max_new_tokens=20,
            eos_ids=[],
            pad_id=pad,
            stop_rows=lambda tokens, t: calls.append(t) or torch.full((2,), t >= 3),
        )
    assert calls == [1, 2, 3]
    assert (out[:, 3:] == pad).all() and (out[:, :3] != pad).all()


def test_reused_static_cache_gives_the_same_tokens(gen):
    """A pooled static cache is reset between batches: what an earlier batch left in it changes nothing."""
    pool: dict = {}
    a_ids, a_mask = _batch(gen, PROMPTS[:3])
    b_ids, b_mask = _batch(gen, [PROMPTS[3], PROMPTS[0], PROMPTS[2]])
    kw = {"max_new_tokens": 8, "eos_ids": [], "pad_id": 0, "static_cache": True}
    with torch.inference_mode():
        fresh_b = decode(gen.model, b_ids, b_mask, **kw)
        decode(gen.model, a_ids, a_mask, cache_pool=pool, **kw)
        cache = next(iter(pool.values()))
        reused_b = decode(gen.model, b_ids, b_mask, cache_pool=pool, **kw)
    if a_ids.shape[1] + 8 <= 128 and b_ids.shape[1] + 8 <= 128:  # same rounded length: the same object
        assert next(iter(pool.values())) is cache and len(pool) == 1
    assert torch.equal(fresh_b, reused_b)


def test_compiled_style_step_is_used_and_equal(gen):
    """A replacement one-token step (what torch.compile gives on CUDA) runs every step after prefill."""
    ids, mask = _batch(gen, PROMPTS)
    seen = []

    def step(**kw):
        seen.append(tuple(kw["input_ids"].shape) + tuple(kw["attention_mask"].shape))
        return gen.model(**kw)

    with torch.inference_mode():
        plain = decode(gen.model, ids, mask, max_new_tokens=6, eos_ids=[], pad_id=0, static_cache=True)
        stepped = decode(
            gen.model, ids, mask, max_new_tokens=6, eos_ids=[], pad_id=0, static_cache=True, step_forward=step
        )
    assert torch.equal(plain, stepped)
    assert len(seen) == 5 and len(set(seen)) == 1  # static shapes: one graph serves every step
    assert seen[0][:2] == (len(PROMPTS), 1)
    with torch.inference_mode():  # a longer cache (one shape for every batch of a call) changes nothing
        longer = decode(
            gen.model,
            ids,
            mask,
            max_new_tokens=6,
            eos_ids=[],
            pad_id=0,
            static_cache=True,
            step_forward=step,
            min_cache_len=300,
        )
    assert torch.equal(plain, longer) and seen[-1][3] == 384


# ---------------------------------------------------------------------- the sampler


def _chi2_p(picks, probs):
    counts = torch.bincount(picks, minlength=probs.numel()).double()
    keep = probs > 0
    assert counts[~keep].sum() == 0, "a token of probability 0 was drawn"
    p = probs.double()[keep]
    return scipy_stats.chisquare(counts[keep].numpy(), (p / p.sum() * picks.numel()).numpy()).pvalue


def _draw(logits, temperature, top_p, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(n, 1, generator=g, dtype=torch.float64).float()
    sampler = InverseCDFSampler(temperature, top_p, u)
    return sampler(logits.expand(n, -1), 0)


LOGITS = torch.tensor([[2.0, 1.0, 0.5, 0.0, -0.5, -1.0, -3.0, float("-inf")]])


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_sampler_matches_softmax_and_fails_when_mutated(temperature):
    picks = _draw(LOGITS, temperature, 1.0, 40_000)
    assert _chi2_p(picks, torch.softmax(LOGITS[0] / temperature, -1)) > ALPHA
    # power: the same draws against a doubled or halved temperature are rejected
    for wrong in (temperature * 2, temperature / 2):
        assert _chi2_p(picks, torch.softmax(LOGITS[0] / wrong, -1)) < ALPHA


def test_sampler_top_p_nucleus():
    probs = torch.softmax(LOGITS[0], -1)  # 0.536, 0.197, 0.120, 0.073, ...
    picks = _draw(LOGITS, 1.0, 0.8, 40_000, seed=1)
    nucleus = probs.clone()
    nucleus[3:] = 0  # mass above token 2 is 0.733 < 0.8, above token 3 0.853: tokens 0..2 stay
    assert _chi2_p(picks, nucleus / nucleus.sum()) > ALPHA
    assert _chi2_p(picks, probs) < ALPHA  # the untruncated distribution is rejected (tail tokens never drawn)
    wider = probs.clone()
    wider[4:] = 0
    assert _chi2_p(picks, wider / wider.sum()) < ALPHA


def test_inverse_cdf_edges():
    w = torch.tensor([[0.0, 0.5, 0.0, 0.5, 0.0]] * 4)
    u = torch.tensor([[0.0], [0.49], [0.5], [1.0]])  # 1.0 cannot come from torch.rand but must not pick a 0
    assert _inverse_cdf(w, u).tolist() == [1, 1, 3, 3]


def test_greedy_picks_first_max_and_tiny_top_p_is_greedy():
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0], [5.0, 5.0, 1.0, 1.0]])
    assert greedy(logits, 0).tolist() == [1, 0]
    sampler = InverseCDFSampler(1.0, 1e-9, torch.rand(2, 1))
    assert sampler(logits, 0).tolist() == [1, 0]


def test_uniforms_come_from_each_records_generator():
    gens = [record_generator(3, i, "t") for i in range(3)]
    s = InverseCDFSampler.for_records(1.0, 1.0, gens, 5, "cpu")
    again = [record_generator(3, i, "t") for i in (2, 0)]
    t = InverseCDFSampler.for_records(1.0, 1.0, again, 5, "cpu")
    assert torch.equal(s.uniforms[[2, 0]], t.uniforms)
    assert s.uniforms.shape == (3, 5) and not torch.equal(s.uniforms[0], s.uniforms[1])


def test_static_cache_by_default_with_fallback(gen, monkeypatch):
    import ppt.lm.decode as dec

    auto = LocalGenerator(gen.model, gen.tokenizer, batch_size=8)
    assert auto.static_cache is True
    params = SamplingParams(max_new_tokens=6, temperature=1.0)
    want = _outs(auto.generate(PROMPTS, params, [record_generator(1, i) for i in range(5)]))

    def unsupported(*a, **k):
        raise NotImplementedError("no static layout")

    monkeypatch.setattr(dec, "_static_cache", unsupported)
    fresh = LocalGenerator(gen.model, gen.tokenizer, batch_size=8)
    assert _outs(fresh.generate(PROMPTS, params, [record_generator(1, i) for i in range(5)])) == want
    assert fresh.static_cache is False  # remembered for the next batches
    forced = LocalGenerator(gen.model, gen.tokenizer, batch_size=8, static_cache=True)
    with pytest.raises(NotImplementedError):  # asked for explicitly: no silent fallback
        forced.generate(PROMPTS[:1], params)


def test_decoder_choice_is_checked(gen):
    with pytest.raises(ValueError):
        LocalGenerator(gen.model, gen.tokenizer, decoder="nope")
