"""Diversity of a generation (SimCTG / InferDPT Table VII).

distinct_n = |unique n-grams| / |total n-grams| for n = 2, 3, 4 over word tokens
(:func:`ppt.metrics.text.words`). InferDPT's text writes the combination as a sum over n, but the
values it reports (0.94-0.99) are the product used by SimCTG, which it cites: diversity =
prod_n distinct_n (in [0, 1]). ``combine="sum"`` gives the written formula (in [0, 3]). A text with
fewer than n tokens has no n-grams: its distinct_n is 1 (nothing repeated).
"""

from __future__ import annotations

import math

from ppt.metrics.text import ngrams, words

NS = (2, 3, 4)


def distinct(tokens: list[str], n: int) -> float:
    grams = ngrams(tokens, n)
    return len(set(grams)) / len(grams) if grams else 1.0


def diversity(text: str, ns: tuple[int, ...] = NS, combine: str = "product") -> dict[str, float]:
    """{"diversity": combined, "distinct_2": .., "distinct_3": .., "distinct_4": ..}."""
    if combine not in ("product", "sum"):
        raise ValueError("combine must be 'product' or 'sum'")
    toks = words(text)
    parts = {f"distinct_{n}": distinct(toks, n) for n in ns}
    vals = list(parts.values())
    combined = math.prod(vals) if combine == "product" else sum(vals)
    return {"diversity": combined, **parts}
