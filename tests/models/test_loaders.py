"""ppt.models loaders: tiny random models by path, and the real packaged weights.

Fast tests use tiny random models built from configs in tmp dirs; tests that load the real packaged
weights (smollm2, minilm, splade-tiny) are marked ``integration``.
"""

from __future__ import annotations

import time

import pytest

from ppt.io import PptError
from ppt.models import registry
from tests.helpers import needs

# --------------------------------------------------------------------------------------------------
# tiny random models by path


WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "a", "private", "text", "hello", "world", "paris", "alice"]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from ppt.testing import bert_tokenizer, tiny_bert

    d = tmp_path_factory.mktemp("tiny-bert")
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = list(
        dict.fromkeys(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *[f"##{c}" for c in letters], *letters, ".", ","]
        )
    )
    tok = bert_tokenizer(vocab)
    assert len(tok) == len(vocab)
    tiny_bert(len(vocab)).save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def tiny_causal(tmp_path_factory):
    from ppt.testing import tiny_llama, word_tokenizer

    d = tmp_path_factory.mktemp("tiny-llama")
    words = ["<unk>", "<s>", "</s>", *WORDS]
    tok = word_tokenizer(words, "<unk>", unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    tiny_llama(len(words), bos_token_id=1, eos_token_id=2).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def test_load_masked_lm_by_path(tiny_bert, capsys):
    import torch

    from ppt.models import load_masked_lm

    model, tok = load_masked_lm(str(tiny_bert), device="cpu")
    assert not model.training and type(model).__name__ == "BertForMaskedLM"
    x = tok(["the cat sat on the [MASK]"], return_tensors="pt")
    with torch.no_grad():
        logits = model(**x).logits
    assert logits.shape == (1, x["input_ids"].shape[1], model.config.vocab_size)
    assert capsys.readouterr().out == ""  # nothing from the libraries on stdout


def test_load_sentence_encoder_by_path(tiny_bert, capsys):
    import torch

    from ppt.models import SentenceEncoder, load_sentence_encoder

    enc = load_sentence_encoder(str(tiny_bert), device="cpu")
    assert isinstance(enc, SentenceEncoder) and enc.dim == 32
    texts = ["hello world", "the cat sat on the mat", "a", "alice ran to paris with a dog", "hello world"]
    e = enc.encode(texts)
    assert e.shape == (5, 32) and e.dtype == torch.float32 and e.device.type == "cpu"
    torch.testing.assert_close(e.norm(dim=1), torch.ones(5))
    torch.testing.assert_close(e[0], e[4])
    assert (e[0] - e[1]).abs().max() > 1e-3  # real tokens, not all [UNK]
    assert enc.tokenizer.convert_tokens_to_ids("alice") != enc.tokenizer.unk_token_id
    # batching and padding do not change embeddings (mean pooling over the attention mask)
    torch.testing.assert_close(enc.encode(texts, batch_size=1), e, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(enc.encode(texts[1:2])[0], e[1], atol=1e-5, rtol=1e-4)
    assert enc.encode([]).shape == (0, 32)
    with pytest.raises(TypeError):
        enc.encode("not a list")
    assert capsys.readouterr().out == ""


def test_mean_pooling_matches_reference(tiny_bert):
    import torch
    from transformers import AutoModel, AutoTokenizer

    from ppt.models import load_sentence_encoder

    texts = ["the cat sat", "hello world alice ran"]
    model = AutoModel.from_pretrained(tiny_bert).eval()
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    with torch.no_grad():
        x = tok(texts, padding=True, return_tensors="pt")
        h = model(**x).last_hidden_state
        m = x["attention_mask"].unsqueeze(-1).float()
        ref = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=1)
    torch.testing.assert_close(
        load_sentence_encoder(str(tiny_bert), device="cpu").encode(texts), ref, atol=1e-5, rtol=1e-4
    )


def test_load_tokenizer_and_input_embeddings_by_path(tiny_bert):
    from ppt.models import load_model_input_embeddings, load_tokenizer

    tok = load_tokenizer(str(tiny_bert))
    assert tok.convert_tokens_to_ids("cat") == 5 + WORDS.index("cat")
    w, tok2 = load_model_input_embeddings(str(tiny_bert))
    assert w.shape == (len(tok2), 32) and w.device.type == "cpu"


def test_load_causal_lm_by_path(tiny_causal, capsys):
    import torch

    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(str(tiny_causal), device="cpu", dtype="float32")
    assert not model.training and model.dtype == torch.float32
    assert tok.padding_side == "left" and tok.pad_token is not None
    batch = tok(["hello world", "the cat sat on the mat"], return_tensors="pt", padding=True)
    assert batch["attention_mask"][0, 0] == 0  # left padded
    out = model.generate(**batch, max_new_tokens=3, do_sample=False, pad_token_id=tok.pad_token_id)
    assert out.shape[0] == 2 and out.shape[1] == batch["input_ids"].shape[1] + 3
    assert capsys.readouterr().out == ""


def test_loading_a_directory_that_is_not_a_model(tmp_path):
    from ppt.models import load_masked_lm

    (tmp_path / "empty").mkdir()
    with pytest.raises(PptError, match="cannot load"):
        load_masked_lm(str(tmp_path / "empty"), device="cpu")


def test_hub_id_offline_gives_a_clear_error(monkeypatch):
    from ppt.models import load_masked_lm, load_sentence_encoder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for fn in (load_masked_lm, load_sentence_encoder):
        with pytest.raises(PptError) as e:
            fn("ppt-test-org/definitely-not-a-model", device="cpu")
        assert "hub" in e.value.message and "HF_HUB_OFFLINE" in e.value.message
        assert "minilm" in e.value.hint


# --------------------------------------------------------------------------------------------------
# integration: the real packaged weights


@pytest.mark.integration
@needs("smollm2")
def test_smollm2_converts_once_then_loads_fast(tmp_cache):
    import torch

    from ppt.cache import Cache
    from ppt.models import load_causal_lm, load_tokenizer

    t0 = time.perf_counter()
    model, tok = load_causal_lm("smollm2", device="cpu")
    first = time.perf_counter() - t0
    assert model.config.vocab_size == 49152 and model.config.hidden_size == 576
    assert tok.chat_template and tok.padding_side == "left" and tok.pad_token is not None
    arts = [e for e in Cache().entries() if e[0] == "model-smollm2"]
    assert len(arts) == 1 and (arts[0][2] / "model.safetensors").is_file()
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    x = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = model.generate(**x, max_new_tokens=12, do_sample=False)
    answer = tok.decode(out[0, x["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in answer
    t0 = time.perf_counter()
    model2, tok2 = load_causal_lm("smollm2", device="cpu")
    second = time.perf_counter() - t0
    assert second < 5 and second < first / 2, (first, second)
    assert torch.equal(model.lm_head.weight, model2.lm_head.weight)
    assert load_tokenizer("smollm2").chat_template == tok.chat_template


@pytest.mark.integration
@needs("minilm")
def test_minilm_sentence_encoder(tmp_cache):
    import torch

    from ppt.models import load_model_input_embeddings, load_sentence_encoder

    enc = load_sentence_encoder("minilm", device="cpu")
    assert enc.dim == 384 and enc.max_length == 256
    e = enc.encode(
        ["A man is playing a guitar.", "Someone plays an instrument.", "The stock market fell sharply today."]
    )
    torch.testing.assert_close(e.norm(dim=1), torch.ones(3))
    sim = e @ e.T
    assert sim[0, 1] > 0.4 and sim[0, 1] > sim[0, 2] + 0.2
    w, tok = load_model_input_embeddings("minilm")
    assert w.shape == (30522, 384) and len(tok) == 30522


@pytest.mark.integration
@needs("splade-tiny")
def test_splade_tiny_masked_lm(tmp_cache):
    import torch

    from ppt.models import load_masked_lm

    model, tok = load_masked_lm("splade-tiny", device="cpu")
    assert model.config.vocab_size == 30522 and model.config.num_hidden_layers == 2
    x = tok("The capital of France is [MASK].", return_tensors="pt")
    with torch.no_grad():
        logits = model(**x).logits
    assert logits.shape[-1] == 30522 and torch.isfinite(logits).all()


@pytest.mark.integration
@needs("glove-6b-50d")
def test_glove_files(tmp_cache):
    import numpy as np

    files = registry.asset_files("glove-6b-50d")
    emb = np.load(files["glove_6B_50d_emb.npy"], mmap_mode="r")
    assert emb.shape == (400000, 50)
