"""ppt.lm.generate: batched generation on a tiny random Llama (left padding, masks, seeds, stops)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ppt.io import RecordError  # noqa: E402
from ppt.lm.generate import Completion, LocalGenerator, SamplingParams  # noqa: E402
from ppt.rng import record_torch_generator as record_generator  # noqa: E402 - LM sampling takes torch generators
from tests.helpers import LM_PROMPTS as PROMPTS  # noqa: E402


@pytest.fixture(scope="module")
def gen(tiny_lm):
    return LocalGenerator.load(str(tiny_lm), device="cpu", batch_size=8)


def _texts(outs):
    assert all(isinstance(o, Completion) for o in outs), outs
    return [o.text for o in outs]


def test_batched_greedy_matches_one_at_a_time(gen):
    params = SamplingParams(max_new_tokens=10)
    batched = gen.generate(PROMPTS, params)
    single = [gen.generate([p], params)[0] for p in PROMPTS]
    assert _texts(batched) == _texts(single)
    assert [o.completion_tokens for o in batched] == [o.completion_tokens for o in single]
    # prompt lengths differ a lot, so this exercised left padding + attention masks
    lengths = [o.prompt_tokens for o in batched]
    assert max(lengths) > 3 * min(lengths)
    for p, o in zip(PROMPTS, batched):
        assert o.prompt_tokens == gen.count_tokens(p)
        assert o.usage["total_tokens"] == o.prompt_tokens + o.completion_tokens


def test_seeded_sampling_independent_of_batching(gen):
    params = SamplingParams(max_new_tokens=8, temperature=1.0, top_p=0.95)

    def run(batch_size, order):
        g = LocalGenerator(gen.model, gen.tokenizer, batch_size=batch_size)
        outs = g.generate([PROMPTS[i] for i in order], params, [record_generator(7, i, "t") for i in order])
        return dict(zip(order, _texts(outs)))

    a = run(8, [0, 1, 2, 3, 4])
    b = run(2, [4, 2, 0, 3, 1])
    assert a == b
    other = LocalGenerator(gen.model, gen.tokenizer).generate(
        PROMPTS, params, [record_generator(8, i, "t") for i in range(5)]
    )
    assert _texts(other) != [a[i] for i in range(5)]


def test_tiny_top_p_is_greedy(gen):
    greedy = gen.generate(PROMPTS[:3], SamplingParams(max_new_tokens=6))
    nucleus = gen.generate(PROMPTS[:3], SamplingParams(max_new_tokens=6, temperature=1.5, top_p=1e-6))
    assert _texts(greedy) == _texts(nucleus)


def test_length_and_stop_strings(gen):
    full = gen.generate([PROMPTS[0]], SamplingParams(max_new_tokens=12))[0]
    assert full.finish_reason == "length" and full.completion_tokens == 12
    stop = next(ch for ch in full.text[2:] if ch.strip())  # a character the greedy text contains later on
    cut = gen.generate([PROMPTS[0]], SamplingParams(max_new_tokens=12, stop=(stop,)))[0]
    assert cut.finish_reason == "stop"
    assert cut.text == full.text[: full.text.index(stop)]
    assert cut.completion_tokens <= full.completion_tokens


def test_eos_ends_a_row(gen):
    ids = torch.tensor([gen.tokenizer(PROMPTS[0])["input_ids"]])
    new = gen.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)[0, -3:]
    g = LocalGenerator(gen.model, gen.tokenizer)
    g.eos_ids = [*gen.eos_ids, int(new[2])]  # pretend the third generated token of row 0 is an EOS
    outs = g.generate(PROMPTS[:2], SamplingParams(max_new_tokens=10))
    assert outs[0].finish_reason == "stop" and outs[0].completion_tokens <= 3
    assert outs[1].completion_tokens >= 1


def test_chat_template_and_fallback(gen):
    text, special = gen.render([{"role": "user", "content": "hello"}])
    assert "<|im_start|>user\nhello<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")
    assert special is False
    assert gen.render("plain prompt") == ("plain prompt", True)
    plain = LocalGenerator(gen.model, gen.tokenizer)
    plain.tokenizer = type(gen.tokenizer).from_pretrained(gen.tokenizer.name_or_path)
    plain.tokenizer.chat_template = None
    assert plain.render([{"role": "user", "content": "hello"}]) == ("hello", True)
    text, _ = plain.render([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert text == "system: s\n\nuser: u\n\nassistant:"


def test_too_long_prompt_is_a_record_error_not_a_crash(gen):
    outs = gen.generate(["x " * 3000, "The quick"], SamplingParams(max_new_tokens=4))
    assert isinstance(outs[0], RecordError) and outs[0].type == "prompt_too_long"
    assert "x x" not in outs[0].message  # never quotes the prompt
    assert isinstance(outs[1], Completion)


@pytest.mark.parametrize("kwargs", [{"max_new_tokens": 0}, {"temperature": -1}, {"top_p": 0}, {"stop": ("",)}])
def test_sampling_params_validation(kwargs):
    with pytest.raises(ValueError):
        SamplingParams(**kwargs)
