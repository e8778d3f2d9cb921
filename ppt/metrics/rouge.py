"""Rouge-L: longest common subsequence of word tokens (:func:`ppt.metrics.text.words`).

P = LCS / |candidate|, R = LCS / |reference|, F1 = 2PR / (P + R) (beta = 1; no stemming, no stopword
removal). The LCS length uses the bit-parallel algorithm of Crochemore et al. (2001): one big-integer
add/or per candidate token, so long texts cost O(n * m / 64) word operations instead of an n x m table.
"""

from __future__ import annotations

from ppt.metrics.text import words


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two token lists."""
    if not a or not b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        m = masks.get(tok, 0)
        u = v & m
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def rouge_l_tokens(candidate: list[str], reference: list[str]) -> dict[str, float]:
    lcs = lcs_length(candidate, reference)
    p = lcs / len(candidate) if candidate else 0.0
    r = lcs / len(reference) if reference else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return {"precision": p, "recall": r, "f1": f}


def rouge_l(candidate: str, reference: str) -> dict[str, float]:
    """Rouge-L precision, recall and F1 of ``candidate`` against ``reference``."""
    return rouge_l_tokens(words(candidate), words(reference))
