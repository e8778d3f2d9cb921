"""Utility and privacy metrics (MECHANISMS.md "Metrics"), one module per family; pure functions at the
core, the streaming runners of `ppt eval` in :mod:`ppt.stages.eval`.

diversity, mauve, similarity (coherence/alignment), rouge (Rouge-L), accuracy (zero-shot by label-word
log-probability), perplexity, phr (ProSan's privacy hiding rate), mapping (Cape's N_w and retention).
"""

from __future__ import annotations

from ppt.metrics.diversity import diversity
from ppt.metrics.phr import phr
from ppt.metrics.rouge import rouge_l

DESCRIPTIONS = {
    "diversity": "prod over n=2..4 of unique/total word n-grams of the text",
    "mauve": "MAUVE of texts vs --reference-field texts (corpus level)",
    "coherence": "sentence-embedding cosine(--doc-field, text)",
    "alignment": "sentence-embedding cosine(text, --reference-field), reference = non-private output",
    "rouge": "Rouge-L F1 of text against --reference-field",
    "accuracy": "zero-shot accuracy by label-word log-probability (--labels, --label-field)",
    "perplexity": "perplexity of the text under a local causal LM (--lm)",
    "phr": "privacy hiding rate: share of --items-field entries absent from the text",
    "mapping": "retention ratio and N_w from the --alignment-field pairs",
}

__all__ = ["DESCRIPTIONS", "diversity", "phr", "rouge_l"]
