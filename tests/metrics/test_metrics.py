"""Metric values against hand-computed ones: text, diversity, ROUGE-L, PHR, MAUVE, and the LM-based metrics."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from ppt.metrics.diversity import diversity
from ppt.metrics.mauve import area, divergence_curve, mauve
from ppt.metrics.phr import phr
from ppt.metrics.rouge import lcs_length, rouge_l
from ppt.metrics.text import ngrams, words


def test_words_and_ngrams():
    assert words("The CAT, the cat!") == ["the", "cat", "the", "cat"]
    assert ngrams(["a", "b", "c"], 2) == [("a", "b"), ("b", "c")]
    assert ngrams(["a"], 2) == []


def test_diversity_hand_computed():
    d = diversity("a b a b a")  # 2-grams ab ba ab ba: 2/4; 3-grams aba bab aba: 2/3; 4-grams abab baba: 2/2
    assert d["distinct_2"] == pytest.approx(0.5) and d["distinct_3"] == pytest.approx(2 / 3) and d["distinct_4"] == 1.0
    assert d["diversity"] == pytest.approx(0.5 * 2 / 3)
    assert diversity("a b a b a", combine="sum")["diversity"] == pytest.approx(0.5 + 2 / 3 + 1)
    assert diversity("one two three four five")["diversity"] == 1.0
    assert diversity("")["diversity"] == 1.0


def _lcs_dp(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            t[i + 1][j + 1] = t[i][j] + 1 if x == y else max(t[i][j + 1], t[i + 1][j])
    return t[-1][-1]


def test_lcs_matches_dynamic_programming():
    r = random.Random(0)
    for _ in range(300):
        a = [r.choice("abcd") for _ in range(r.randint(0, 40))]
        b = [r.choice("abcd") for _ in range(r.randint(0, 40))]
        assert lcs_length(a, b) == _lcs_dp(a, b)


def test_rouge_l_hand_computed():
    r = rouge_l("the cat sat on the mat", "the cat was on the mat today")
    # LCS = the cat on the mat = 5; P = 5/6, R = 5/7
    assert r["precision"] == pytest.approx(5 / 6) and r["recall"] == pytest.approx(5 / 7)
    assert r["f1"] == pytest.approx(2 * (5 / 6) * (5 / 7) / (5 / 6 + 5 / 7))
    assert rouge_l("", "x")["f1"] == 0.0


def test_phr_case_and_format_insensitive():
    out = "Please call DR J. SMITH on 555 0134; we announce it."
    items = ["Dr. J. Smith", "555-0134", "Ann", "Springfield", "5550134"]
    r = phr(items, out)
    # present: smith (tokens), 555-0134 (tokens), 5550134 (joined); absent: Ann (not inside announce), Springfield
    assert r == {"absent": 2, "total": 5, "phr": 0.4}
    assert phr([], "x")["phr"] is None
    assert phr(["Émile"], "EMILE ÉMILE")["absent"] == 0


def test_mauve_identical_and_disjoint():
    rng = np.random.default_rng(0)
    p = rng.normal(size=(60, 8))
    assert mauve(p, p.copy())["mauve"] == pytest.approx(1.0, abs=1e-6)
    q = rng.normal(size=(60, 8)) + np.r_[40.0, np.zeros(7)]
    assert mauve(p, q)["mauve"] < 0.05
    # the curve of identical histograms is the unit square's corner: area 1
    h = np.array([0.5, 0.5])
    assert area(divergence_curve(h, h)) == pytest.approx(1.0)
    # disjoint supports: x = (1 - l)^5, y = l^5 hugs the axes: a tiny area
    assert area(divergence_curve(np.array([1.0, 0]), np.array([0, 1.0]))) < 0.01


@pytest.mark.skipif(not __import__("importlib").util.find_spec("mauve"), reason="mauve-text not installed")
def test_mauve_close_to_reference_package():
    import mauve as ref

    rng = np.random.default_rng(1)
    p, q = rng.normal(size=(200, 16)), rng.normal(size=(200, 16)) + 0.3
    want = ref.compute_mauve(p_features=p, q_features=q, verbose=False).mauve
    assert mauve(p, q)["mauve"] == pytest.approx(want, abs=0.1)


# ------------------------------------------------------------------------------------ LM-based


@pytest.fixture(scope="module")
def word_lm():
    from ppt.testing import tiny_llama, word_tokenizer

    words = ["<pad>", "<s>", "</s>", "the", "cat", "dog", "sat", "business", "sport", "a", "on", "Answer", ":"]
    tok = word_tokenizer(words, "<pad>", pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    return tiny_llama(len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1), tok


def test_continuation_logprobs_match_full_forward(word_lm):
    from ppt.lm.score import continuation_logprobs

    model, _tok = word_lm
    pairs = [([1, 3, 4], [6, 10]), ([1], [3, 5, 6, 9]), ([1, 3, 4, 6, 10, 3], [7])]
    got = continuation_logprobs(model, pairs, pad_id=0, batch_size=2)
    for (pre, cont), (lp, n) in zip(pairs, got):
        ids = torch.tensor([pre + cont])
        with torch.no_grad():
            logp = torch.log_softmax(model(ids).logits[0].double(), -1)
        want = sum(float(logp[len(pre) - 1 + i, t]) for i, t in enumerate(cont))
        assert n == len(cont) and lp == pytest.approx(want, abs=1e-4)


def test_perplexity_and_zero_shot(word_lm):
    from ppt.metrics.accuracy import ZeroShotClassifier
    from ppt.metrics.perplexity import perplexities, ppl

    model, tok = word_lm
    [(nll, n)] = perplexities(model, tok, ["the cat sat"])
    assert n == 3 and ppl(nll, n) == pytest.approx(math.exp(nll / 3))
    clf = ZeroShotClassifier(model, tok, ["business", "sport"], template="{text} Answer :")
    bump = torch.zeros(model.config.vocab_size)
    bump[tok.convert_tokens_to_ids("sport")] = 100.0  # rig the head: "sport" always wins
    handle = model.lm_head.register_forward_hook(lambda m, i, o: o + bump)
    try:
        preds = clf.predict(["the cat sat", "a dog"])
    finally:
        handle.remove()
    assert [p for p, _ in preds] == ["sport", "sport"] and all(len(s) == 2 for _, s in preds)
    with pytest.raises(ValueError):
        ZeroShotClassifier(model, tok, ["one"])


def test_paired_cosine_with_fake_encoder():
    from ppt.metrics.similarity import paired_cosine

    class Enc:
        def encode(self, texts, batch_size=64):
            return torch.tensor([[1.0, 0.0] if "x" in t else [0.0, 1.0] for t in texts])

    assert paired_cosine(Enc(), ["x", "x", "y"], ["x", "y", "y"]) == pytest.approx([1.0, 0.0, 1.0])
