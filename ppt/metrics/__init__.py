"""Utility and privacy metrics (MECHANISMS.md "Metrics"), one module per family; pure functions at the
core; the streaming runners of `ppt eval` and the metric registry are in :mod:`ppt.stages.eval_metrics`.

diversity, mauve, similarity (coherence/alignment), rouge (Rouge-L), accuracy (zero-shot by label-word
log-probability), perplexity, phr (ProSan's privacy hiding rate), mapping (Cape's N_w and retention).
"""

from __future__ import annotations

from ppt.metrics.diversity import diversity
from ppt.metrics.phr import phr
from ppt.metrics.rouge import rouge_l

__all__ = ["diversity", "phr", "rouge_l"]
