"""``--protect detected``: the mechanism replaces only the pieces a detector marks (:mod:`ppt.detect`); every
other piece passes through verbatim, counted under the reason "undetected" and stated in the stamp as
unprotected (detection depends on the text: what the detector misses is released raw)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ppt.mechanisms.policy import KEEP, R_UNDETECTED
from ppt.spaces.tokens import TokenBatch


def detected_pieces(tb: TokenBatch, spans: Sequence[Sequence]) -> np.ndarray:
    """bool [n pieces]: the piece's core overlaps one of its text's spans (``spans[i]``: Span-likes with
    ``start``/``end`` character offsets into text i)."""
    lead = np.fromiter(map(len, tb.lead), dtype=np.int64, count=len(tb.lead))
    core = np.fromiter(map(len, tb.core), dtype=np.int64, count=len(tb.core))
    ends = np.cumsum(lead + core)
    starts_of_text = np.concatenate([[0], ends])[tb.bounds[:-1]]  # global offset where each text begins
    piece_start = ends - lead - core - np.repeat(starts_of_text, np.diff(tb.bounds))
    core_start = piece_start + lead
    core_end = core_start + core
    inside = np.zeros(len(core), dtype=bool)
    for b, text_spans in enumerate(spans):
        if not text_spans:
            continue
        lo, hi = int(tb.bounds[b]), int(tb.bounds[b + 1])
        s = np.fromiter((sp.start for sp in text_spans), dtype=np.int64)
        e = np.fromiter((sp.end for sp in text_spans), dtype=np.int64)
        cs, ce = core_start[lo:hi, None], core_end[lo:hi, None]
        inside[lo:hi] = ((cs < e[None, :]) & (ce > s[None, :]) & (ce > cs)).any(axis=1)
    return inside


def keep_undetected(actions: np.ndarray, why: np.ndarray, inside: np.ndarray) -> None:
    """In place: every piece outside the detected spans is kept verbatim, for the reason "undetected"."""
    out = ~inside & (actions != KEEP)
    actions[out] = KEEP
    why[out] = R_UNDETECTED


__all__ = ["detected_pieces", "keep_undetected"]
