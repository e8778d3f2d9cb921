"""ppt.attacks.mti: the masked-token inference attack on a tiny BERT."""

from __future__ import annotations

import pytest
import torch

from ppt.testing import bert_tokenizer, tiny_bert


@pytest.fixture
def tiny_mlm():
    """A 1-layer BERT whose head always predicts 'cat' (bias), with a real WordPiece tokenizer."""
    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "the",
        "cat",
        "dog",
        "sat",
        "on",
        "mat",
        "blue",
        "##s",
        ",",
        ".",
    ]
    tok = bert_tokenizer(vocab)
    model = tiny_bert(len(vocab), hidden_size=16, num_hidden_layers=1, intermediate_size=32)
    with torch.no_grad():
        head = model.get_output_embeddings()
        head.weight.zero_()
        head.bias.zero_()
        head.bias[vocab.index("cat")] = 100.0
    return model, tok


def test_mti_success_alignment_and_one_forward_pass(tiny_mlm):
    from ppt.attacks.mti import MtiAttack

    model, tok = tiny_mlm
    seen = []
    model.register_forward_pre_hook(lambda m, a, kw: seen.append(kw["input_ids"].clone()), with_kwargs=True)
    attack = MtiAttack(model, tok)
    text = "the dog sat on the mat."
    # perturbed "dog" replaced the original "cat" (recoverable: the model says cat), "mat" replaced "blue" (not)
    res = attack.predict(text, [(4, 7), (19, 22), None], ["cat", "blue", "cat"])
    assert res[0] == (True, "cat") and res[1][0] is False and res[2] is None
    assert attack.forward_passes == 1 and len(seen) == 1 and seen[0].shape[0] == 2
    mask = tok.mask_token_id
    first = seen[0][0].tolist()
    assert first[:4] == [tok.cls_token_id, tok.convert_tokens_to_ids("the"), mask, tok.convert_tokens_to_ids("sat")]


def test_mti_mask_length(tiny_mlm):
    from ppt.attacks.mti import MtiAttack

    model, tok = tiny_mlm
    orig = MtiAttack(model, tok, mask_length="original")
    one = MtiAttack(model, tok, mask_length="one")
    # "cats" is two WordPiece tokens: original mode masks two positions, predicting "cat cat" != "cats"
    assert orig.predict("the dog sat", [(4, 7)], ["cats"])[0] == (False, "cat cat")
    assert one.predict("the dog sat", [(4, 7)], ["cats"])[0] == (False, "cat")
    with pytest.raises(ValueError):
        MtiAttack(model, tok, mask_length="two")


def test_mti_long_text_is_windowed(tiny_mlm):
    from ppt.attacks.mti import MtiAttack

    model, tok = tiny_mlm
    text = " ".join(["the"] * 200) + " dog"
    res = MtiAttack(model, tok).predict(text, [(len(text) - 3, len(text))], ["cat"])
    assert res[0] == (True, "cat")
