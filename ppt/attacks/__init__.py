"""Privacy attacks on sanitized text; privacy = 1 - attack success rate (MECHANISMS.md "Attacks").

- :mod:`~ppt.attacks.knn`: embedding inversion, top-K nearest vocabulary rows of each perturbed token.
- :mod:`~ppt.attacks.mti`: mask token inference with a masked LM, exact span alignment.
- :mod:`~ppt.attacks.llm`: a generative model restores the original text (token recovery, Rouge-L).
- :mod:`~ppt.attacks.ngram`: share of the raw document's 1/2/3-grams found in a remote output.
- :mod:`~ppt.attacks.realign`: which original token each perturbed token replaced.
- :mod:`~ppt.attacks.summary`: tallies, Wilson intervals and the summary record.

Attacks are evaluation tools: they read the raw text, which must never travel with what is sent to a
remote party.
"""

from __future__ import annotations

from ppt.attacks.summary import Tally, wilson

ATTACKS = {
    "knn": "embedding inversion: original among the K nearest vocabulary embeddings of a perturbed token",
    "mti": "mask token inference: a masked LM predicts each perturbed token from context",
    "llm": "LLM inference: a generative model restores the original text",
    "ngram": "n-gram leakage: raw 1/2/3-grams that appear in a remote output",
}

__all__ = ["ATTACKS", "Tally", "wilson"]
