"""ppt.lm: the shared model helpers and the LanguageModel implementations (local, endpoint, fake)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ppt.io import RecordError  # noqa: E402
from ppt.lm.base import (  # noqa: E402
    bos_prefix,
    context_length,
    eos_ids,
    length_batches,
    length_groups,
    pad_id,
    right_pad,
)
from ppt.lm.generate import Completion, SamplingParams  # noqa: E402
from ppt.testing import FakeLM, tiny_llama, word_tokenizer  # noqa: E402


def test_right_pad_and_masks():
    ids, attn = right_pad([[5, 6, 7], [8], [9, 10]], pad=0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]]
    assert attn.tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 0]]
    assert ids.dtype == attn.dtype == torch.long


def test_length_batches_and_groups():
    assert length_batches([3, 1, 2, 1], 2) == [[1, 3], [2, 0]]  # stable among equal lengths
    assert length_batches([], 4) == []
    # token budget 6: (1,1,2) fit as 3 rows of width 2; the job of length 3 starts a new group
    assert length_groups([2, 1, 3, 1], [10, 11, 12, 13], 6) == [[11, 13, 10], [12]]


def test_model_facts():
    tok = word_tokenizer(["<unk>", "<s>", "</s>", "a"], "<unk>", bos_token="<s>", eos_token="</s>")
    model = tiny_llama(len(tok), max_position_embeddings=48, eos_token_id=2)
    assert context_length(model) == 48 and context_length(object(), 512) == 512
    assert pad_id(tok) == 0 and pad_id(tok, 7) == 7  # no pad token: the fallback
    assert bos_prefix(tok) == [1]
    assert eos_ids(model, tok) == [2]


def test_local_generator_per_prompt_params_match_separate_calls(tiny_lm):
    from ppt.lm.door import get_lm

    lm = get_lm(str(tiny_lm), device="cpu", batch_size=4)
    prompts = ["The quick brown fox", "A patient reports", "The clinic", "Please summarize"]
    short, long = SamplingParams(max_new_tokens=3), SamplingParams(max_new_tokens=6)
    mixed = lm.generate(prompts, [short, long, short, long])
    apart = lm.generate(prompts[0::2], short) + lm.generate(prompts[1::2], long)
    assert [o.text for o in mixed] == [apart[0].text, apart[2].text, apart[1].text, apart[3].text]
    ids = lm.tokenizer("the quick brown fox", add_special_tokens=False)["input_ids"]
    [(lp, n)] = lm.score([([lm.tokenizer.bos_token_id], ids)])
    assert n == len(ids) and lp < 0


def test_fake_lm():
    lm = FakeLM(lambda p: RecordError("x", "y") if p == "bad" else p.upper())
    out = lm.generate(["ok", [{"role": "user", "content": "bad"}]], SamplingParams(max_new_tokens=4))
    assert isinstance(out[0], Completion) and out[0].text == "OK" and isinstance(out[1], RecordError)
    assert [p.max_new_tokens for p in lm.params] == [4, 4]
    with pytest.raises(NotImplementedError):
        lm.score([([1], [2])])
