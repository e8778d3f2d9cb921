"""Issue 37 (a): the accountant's premise "one record changes one subset's vote only" needs each record's
predicted label to be a function of that record alone. Its label log-probs must be bit-identical whether it
is classified alone, beside one other record, or in a batch of eight records of other lengths (padding,
batch composition and the shared-prefix cache differ across those batchings)."""

from __future__ import annotations

import numpy as np
import pytest

from ppt.dpopt.evaluate import label_logprobs

TARGET = "the patient is tired"
OTHERS = [
    "x",
    "a quick brown fox jumps over the lazy dog again and again",
    "the lazy dog",
    "my neighbour is awful and loud every single night of the week",
    "fine",
    "the patient is tired and sad today, says the nurse",
    "ok then",
]
DEMOS = " ".join(f"Input: the patient number {i} is fine Output: yes" for i in range(6))


@pytest.fixture(scope="module")
def wide_lm(tiny_lm):
    """The tiny LM's tokenizer with a random Llama of hidden size 256: wide enough that batched scoring moves a
    row's log-probs (~1e-6..1e-5 on CPU float32) with its batch; the hidden-32 model happens not to."""
    from transformers import AutoTokenizer

    from ppt.testing.models import tiny_llama

    tok = AutoTokenizer.from_pretrained(tiny_lm)
    model = tiny_llama(
        len(tok),
        hidden_size=256,
        intermediate_size=512,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    return model, tok


def _batchings():
    yield [TARGET], 0
    yield [OTHERS[1], TARGET], 1
    batch = OTHERS[:3] + [TARGET] + OTHERS[3:]
    yield batch, 3


@pytest.mark.parametrize("instruction", ["Classify.", "Classify. " + DEMOS])
@pytest.mark.parametrize("labels", [["the", "is"], ["negative feeling", "positive feeling"]])
def test_a_records_label_logprobs_do_not_depend_on_its_batch(wide_lm, instruction, labels):
    model, tok = wide_lm
    rows = [label_logprobs(model, tok, instruction, texts, labels, alone=True)[i] for texts, i in _batchings()]
    for r in rows[1:]:
        assert np.array_equal(r, rows[0]), (rows[0], r, np.abs(r - rows[0]).max())


def test_meta_prompts_classify_each_record_alone(tiny_lm, monkeypatch):
    """The path the accountant relies on: the subsets' meta-prompts put each record under successes or errors
    from its own label only, however many records are classified in the same call."""
    from ppt.dpopt import evaluate as ev
    from ppt.dpopt.tune import TuneConfig, _MetaPrompts
    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(str(tiny_lm), device="cpu", dtype="float32")
    seen = []
    real = ev.label_logprobs
    monkeypatch.setattr(ev, "label_logprobs", lambda *a, **k: seen.append(k.get("alone")) or real(*a, **k))
    texts = [TARGET] + OTHERS
    meta = _MetaPrompts(model, tok, TuneConfig(labels=["negative", "positive"]), texts, ["positive"] * len(texts))
    meta.ids([list(range(len(texts)))], [0])
    assert seen and all(seen)
