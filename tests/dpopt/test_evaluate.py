"""Label-word scoring, the Wilson interval, and private selection."""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.stats import binomtest, chisquare

from ppt.dpopt.evaluate import accuracy, label_logprobs, wilson
from ppt.dpopt.selection import select
from ppt.dpopt.templates import backward, forward


def test_label_logprobs_match_a_direct_forward_pass(tiny_lm):
    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(str(tiny_lm), device="cpu", dtype="float32")
    lp = label_logprobs(model, tok, "Classify.", ["a quick fox", "the lazy dog"], ["yes", "no"])
    assert lp.shape == (2, 2)
    from ppt.lm.base import bos_prefix

    pre = bos_prefix(tok) + tok(forward("Classify.", "the lazy dog"), add_special_tokens=False)["input_ids"]
    cont = tok(" no", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([pre + cont])).logits[0].log_softmax(-1)
    direct = sum(float(logits[len(pre) - 1 + i, c]) for i, c in enumerate(cont))
    assert math.isclose(lp[1, 1], direct, abs_tol=1e-4)


def test_a_long_shared_prefix_is_encoded_once_with_the_same_scores(tiny_lm, monkeypatch):
    """In-context demonstrations make the prompts share hundreds of tokens: the prefix-cached path must score
    exactly as encoding every prompt whole, and must be the path taken."""
    from ppt.dpopt import evaluate as ev
    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(str(tiny_lm), device="cpu", dtype="float32")
    demos = " ".join(f"Input: the patient number {i} is fine Output: yes" for i in range(6))
    texts = ["a quick fox", "the lazy dog jumps over", "x", "the patient is tired and sad today"]
    taken = []
    real = ev._prefix_cached
    monkeypatch.setattr(ev, "_prefix_cached", lambda *a: taken.append(a[-1]) or real(*a))
    cached = label_logprobs(model, tok, "Classify. " + demos, texts, ["the", "is"], batch_size=3)
    assert taken and taken[0] > 40  # the shared prefix went through the cache
    monkeypatch.setattr(ev, "_prefix_cached", lambda *a: (_ for _ in ()).throw(ValueError("off")))
    plain = label_logprobs(model, tok, "Classify. " + demos, texts, ["the", "is"], batch_size=3)
    assert np.abs(cached - plain).max() < 1e-4


def test_wilson_interval_agrees_with_scipy():
    for c, n in ((0, 10), (37, 50), (250, 400)):
        ci = binomtest(c, n).proportion_ci(method="wilson")
        assert np.allclose(wilson(c, n), (ci.low, ci.high), atol=1e-9)
    acc = accuracy(np.array([0, 1, 1]), np.array([0, 1, 0]))
    assert acc["correct"] == 2 and acc["n"] == 3


def test_selection_is_the_exponential_mechanism_on_counts():
    counts = torch.tensor([10.0, 9.0, 7.0])
    assert select(counts, math.inf, torch.Generator()) == 0
    eps, n = 0.5, 6000
    g = torch.Generator().manual_seed(1)
    freq = np.bincount([select(counts, eps, g) for _ in range(n)], minlength=3)
    p = torch.softmax(eps * counts.double(), 0).numpy()
    assert chisquare(freq, p * n).pvalue > 1e-6
    assert chisquare(freq, torch.softmax(2 * eps * counts.double(), 0).numpy() * n).pvalue < 1e-6  # eps doubled


def test_backward_template_sections():
    s = backward("Do it.", [("x1", "pos")], [("x2", "neg", "pos")], message=1)
    assert "# Student successes" in s and "# Student errors" in s and s.endswith("# Improved Instruction\n>")
    # the instruction is one quoted line, so a model continuing the open quote writes instruction words
    assert "# Instruction\n> Do it.\n" in s
    assert "\n> Do it. Twice.\n" in backward("Do it.\n\nTwice.", [], [], message=0)


def test_single_token_fast_path_equals_the_general_scorer(tiny_lm):
    from ppt.dpopt import evaluate as ev
    from ppt.models import load_causal_lm

    model, tok = load_causal_lm(str(tiny_lm), device="cpu", dtype="float32")
    singles = [w for w in ("the", "and", "is", "your") if len(tok(" " + w, add_special_tokens=False)["input_ids"]) == 1]
    assert len(singles) >= 2
    texts = ["a quick fox", "the lazy dog jumps", "x"]
    fast = ev.label_logprobs(model, tok, "Classify.", texts, singles[:2])
    from ppt.lm.base import bos_prefix, pad_id
    from ppt.lm.score import continuation_logprobs

    pairs = [
        (
            bos_prefix(tok) + tok(ev.forward("Classify.", t), add_special_tokens=False)["input_ids"],
            tok(" " + y, add_special_tokens=False)["input_ids"],
        )
        for t in texts
        for y in singles[:2]
    ]
    slow = np.array([s for s, _ in continuation_logprobs(model, pairs, pad_id=pad_id(tok))]).reshape(3, 2)
    assert np.allclose(fast, slow, atol=1e-4)
