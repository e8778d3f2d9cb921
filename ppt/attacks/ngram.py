"""N-gram leakage (InferDPT Table VI): the share of the raw document's distinct word n-grams that also
appear in a text the remote party sees or produces (its generation, or the perturbed prompt itself).

Tokens are :func:`ppt.metrics.text.words` (case-folded ``\\w+``); n-grams are counted as sets, so a
phrase repeated in the document counts once. A leak of n-gram g: g in ngrams(raw) and g in ngrams(output).
"""

from __future__ import annotations

from ppt.metrics.text import ngrams, words


def ngram_leakage(raw: str, output: str, ns: tuple[int, ...] = (1, 2, 3)) -> dict[int, tuple[int, int]]:
    """{n: (leaked, total)} over the distinct n-grams of ``raw``."""
    rw, ow = words(raw), words(output)
    out = {}
    for n in ns:
        ref = set(ngrams(rw, n))
        seen = set(ngrams(ow, n))
        out[n] = (len(ref & seen), len(ref))
    return out
