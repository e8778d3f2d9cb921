"""``--protect detected``: the mechanism replaces only the pieces a detector marks (:mod:`ppt.detect`); every
other piece passes through verbatim, counted under the reason "undetected" and stated in the stamp as
unprotected (detection depends on the text: what the detector misses is released raw)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ppt.mechanisms.policy import KEEP, R_UNDETECTED
from ppt.spaces.tokens import TokenBatch


def detected_span_index(tb: TokenBatch, spans: Sequence[Sequence]) -> np.ndarray:
    """int64 [n pieces]: the index (in its text's ``spans``) of the span a piece's core overlaps, -1 for none
    (``spans[i]``: Span-likes with ``start``/``end`` character offsets into text i)."""
    lead = np.fromiter(map(len, tb.lead), dtype=np.int64, count=len(tb.lead))
    core = np.fromiter(map(len, tb.core), dtype=np.int64, count=len(tb.core))
    ends = np.cumsum(lead + core)
    starts_of_text = np.concatenate([[0], ends])[tb.bounds[:-1]]  # global offset where each text begins
    piece_start = ends - lead - core - np.repeat(starts_of_text, np.diff(tb.bounds))
    core_start = piece_start + lead
    core_end = core_start + core
    index = np.full(len(core), -1, dtype=np.int64)
    for b, text_spans in enumerate(spans):
        if not text_spans:
            continue
        lo, hi = int(tb.bounds[b]), int(tb.bounds[b + 1])
        s = np.fromiter((sp.start for sp in text_spans), dtype=np.int64)
        e = np.fromiter((sp.end for sp in text_spans), dtype=np.int64)
        cs, ce = core_start[lo:hi, None], core_end[lo:hi, None]
        hit = (cs < e[None, :]) & (ce > s[None, :]) & (ce > cs)
        index[lo:hi] = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
    return index


def detected_pieces(tb: TokenBatch, spans: Sequence[Sequence]) -> np.ndarray:
    """bool [n pieces]: the piece's core overlaps one of its text's spans."""
    return detected_span_index(tb, spans) >= 0


def span_mapping(
    text: str, text_out: str, spans: Sequence, span_of: np.ndarray, pairs: np.ndarray
) -> list[dict[str, str]]:
    """One record's replaced spans, ``[{"surrogate", "original", "kind"}]`` in text order: the output text the
    span's replaced pieces became (from the first one's start to the last one's end) and the span's original
    text. ``span_of``: the span index of each replaced piece of the record, in order, beside ``pairs`` (their
    [_, _, start, end] in the output text)."""
    out = []
    for j, sp in enumerate(spans):
        rows = pairs[span_of == j]
        if not len(rows):
            continue
        start, end = int(rows[:, 2].min()), int(rows[:, 3].max())
        surrogate = text_out[start:end].strip()
        if surrogate:
            out.append({"surrogate": surrogate, "original": text[sp.start : sp.end], "kind": sp.kind})
    return out


def keep_undetected(actions: np.ndarray, why: np.ndarray, inside: np.ndarray) -> None:
    """In place: every piece outside the detected spans is kept verbatim, for the reason "undetected"."""
    out = ~inside & (actions != KEEP)
    actions[out] = KEEP
    why[out] = R_UNDETECTED


__all__ = ["detected_pieces", "detected_span_index", "keep_undetected", "span_mapping"]
