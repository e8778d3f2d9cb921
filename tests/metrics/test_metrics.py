"""Metric values against hand-computed ones, and `ppt eval` as a user runs it."""

from __future__ import annotations

import json
import math
import random
import subprocess

import numpy as np
import pytest
import torch

from ppt.metrics.diversity import diversity
from ppt.metrics.mapping import MappingTally, probe
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


# ------------------------------------------------------------------------------------ mapping


def test_mapping_tally():
    t = MappingTally()
    t.add(np.array([1, 1, 2, 3]), np.array([1, 5, 2, 4]))
    t.add(np.array([1]), np.array([6]))
    s = t.summary()
    assert s["pairs"] == 5 and s["retention"] == pytest.approx(2 / 5)
    assert s["n_w_mean"] == pytest.approx((3 + 1 + 1) / 3)


class _Mech:
    """A per-token kernel: with probability p keep the row, else a uniform row."""

    name, device = "coin", torch.device("cpu")

    def __init__(self, v, p):
        self.v, self.p = v, p

    def draw(self, n, g):
        return {"u": torch.rand(n, generator=g), "r": torch.randint(0, self.v, (n,), generator=g)}

    def perturb_rows(self, rows, rand):
        return torch.where(rand["u"] < self.p, rows, rand["r"]), {}


def test_probe_identity_and_uniform():
    rows = np.arange(10)
    ident = probe(_Mech(50, 1.0), rows, draws=100)
    assert ident["retention"] == 1.0 and ident["n_w_mean"] == 1.0
    unif = probe(_Mech(50, 0.0), rows, draws=2000, generator=torch.Generator().manual_seed(1))
    assert unif["retention"] == pytest.approx(1 / 50, abs=0.01)
    assert unif["n_w_mean"] == pytest.approx(50, abs=1)  # 2000 uniform draws cover 50 rows


# ------------------------------------------------------------------------------------ LM-based


@pytest.fixture(scope="module")
def tiny_lm():
    from ppt.testing import tiny_llama, word_tokenizer

    words = ["<pad>", "<s>", "</s>", "the", "cat", "dog", "sat", "business", "sport", "a", "on", "Answer", ":"]
    tok = word_tokenizer(words, "<pad>", pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    return tiny_llama(len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1), tok


def test_continuation_logprobs_match_full_forward(tiny_lm):
    from ppt.lm.score import continuation_logprobs

    model, _tok = tiny_lm
    pairs = [([1, 3, 4], [6, 10]), ([1], [3, 5, 6, 9]), ([1, 3, 4, 6, 10, 3], [7])]
    got = continuation_logprobs(model, pairs, pad_id=0, batch_size=2)
    for (pre, cont), (lp, n) in zip(pairs, got):
        ids = torch.tensor([pre + cont])
        with torch.no_grad():
            logp = torch.log_softmax(model(ids).logits[0].double(), -1)
        want = sum(float(logp[len(pre) - 1 + i, t]) for i, t in enumerate(cont))
        assert n == len(cont) and lp == pytest.approx(want, abs=1e-4)


def test_perplexity_and_zero_shot(tiny_lm):
    from ppt.metrics.accuracy import ZeroShotClassifier
    from ppt.metrics.perplexity import perplexities, ppl

    model, tok = tiny_lm
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


# ------------------------------------------------------------------------------------ CLI


def ppt(*args, stdin: str = "", timeout: int = 300):
    return subprocess.run(["ppt", *args], check=False, input=stdin, capture_output=True, text=True, timeout=timeout)


def test_cli_eval_summary_on_stdout_and_per_record():
    rows = [{"id": 1, "text": "a b a b a", "ref": "a b a b a", "items": ["Secret Name"]},
            {"id": 2, "text": "one two three four", "ref": "one two", "items": ["two"]}]
    stdin = "".join(json.dumps(r) + "\n" for r in rows)
    r = ppt("eval", "diversity,rouge", "phr", "--reference-field", "ref", "--items-field", "items", "-q", stdin=stdin)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["n_records"] == 2
    assert s["metrics"]["diversity"]["diversity"] == pytest.approx((1 / 3 + 1) / 2)
    assert s["metrics"]["rouge"]["rouge"] == pytest.approx((1 + 2 * 0.5 / 1.5) / 2)
    assert s["metrics"]["phr"]["phr"] == pytest.approx(0.5)
    r = ppt("eval", "metrics", "diversity", "--per-record", "-", "-q", stdin=stdin)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["id"] for x in lines] == [1, 2] and lines[1]["eval"]["diversity"]["diversity"] == 1.0
    assert json.loads(r.stderr.strip().splitlines()[-1])["metrics"]["diversity"]["n"] == 2
    assert "Secret" not in r.stderr


def test_cli_eval_errors():
    stdin = json.dumps({"id": 1, "text": "x"}) + "\n"
    assert ppt("eval", "nope", stdin=stdin).returncode == 2
    assert ppt("eval", "rouge", stdin=stdin).returncode == 2  # needs --reference-field
    r = ppt("eval", "rouge", "--reference-field", "ref", "--on-error", "skip", "-q", stdin=stdin)
    assert r.returncode == 1 and json.loads(r.stdout)["n_records"] == 0
