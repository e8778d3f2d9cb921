"""ppt.attacks.ngram: n-gram leakage."""

from __future__ import annotations

from ppt.attacks.ngram import ngram_leakage


def test_ngram_leakage_hand_computed():
    leak = ngram_leakage("The cat sat on the mat", "a cat sat on a rug")
    # distinct unigrams of raw: the cat sat on mat (5); in output: cat sat on (3)
    assert leak[1] == (3, 5)
    # bigrams raw: the-cat cat-sat sat-on on-the the-mat (5); output has cat-sat, sat-on
    assert leak[2] == (2, 5)
    assert leak[3] == (1, 4)
    assert ngram_leakage("x", "x", (2,))[2] == (0, 0)
