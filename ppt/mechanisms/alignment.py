"""Which original token each perturbed token replaced, as the ``ppt_alignment`` field writes it.

Why here: the mechanism knows the pairs exactly (``Sanitized.pairs``, computed by the pipeline where it
rebuilds the text), so sanitizing with ``--emit-alignment`` needs neither a spy on the mechanism nor the
attacks package. The field's format::

    "ppt_alignment": [[orig_row, new_row, start, end], ...]     # one entry per perturbed token

keeps the spans it has always had: each new row located, in order, in the sanitized text re-tokenized
by the mechanism's space (:func:`spans_by_rows`; ``[orig_row, new_row]`` where that finds no span, or
when the mechanism has no space, as Cape). Those spans are byte-identical to earlier releases; the
exact spans are ``Sanitized.pairs[:, 2:]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ppt.spaces.tokens import Tokens


def piece_spans(tokens: Tokens) -> list[tuple[int, int]]:
    """Character span of each piece's core (its leading whitespace excluded)."""
    out, pos = [], 0
    for lead, core in zip(tokens.lead, tokens.core):
        start = pos + len(lead)
        pos = start + len(core)
        out.append((start, pos))
    return out


def spans_by_rows(space, text: str, new_rows: np.ndarray) -> list[tuple[int, int] | None]:
    """Locate each perturbed row, in order, in the re-tokenized text (greedy leftmost subsequence).

    Used when only rows are known. A kept token with the same row as a later replacement can take
    that replacement's place; the error stays local (later rows still match in order)."""
    toks = space.tokenize(text)
    spans = piece_spans(toks)
    rows = toks.rows.tolist()
    out: list[tuple[int, int] | None] = []
    j = 0
    for r in new_rows.tolist():
        k = j
        while k < len(rows) and rows[k] != r:
            k += 1
        if k < len(rows):
            out.append(spans[k])
            j = k + 1
        else:
            out.append(None)
    return out


def entries(orig_rows: np.ndarray, new_rows: np.ndarray, spans: list[tuple[int, int] | None]) -> list[list[int]]:
    """[orig_row, new_row, start, end] per perturbed token, or [orig_row, new_row] where the span is unknown."""
    out = []
    for o, n, span in zip(np.asarray(orig_rows).tolist(), np.asarray(new_rows).tolist(), spans):
        out.append([o, n] if span is None else [o, n, int(span[0]), int(span[1])])
    return out


def alignment_entries(result: Any, space=None) -> list[list[int]] | None:
    """The ``ppt_alignment`` value of one :class:`~ppt.mechanisms.base.Sanitized` (see the module
    docstring), spans located in ``space`` (none without one); None when the mechanism reported no pairs."""
    pairs = getattr(result, "pairs", None)
    if pairs is None:
        return None
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 4)
    new = pairs[:, 1]
    spans = spans_by_rows(space, result.text, new) if space is not None else [None] * len(new)
    return entries(pairs[:, 0], new, spans)


__all__ = ["alignment_entries", "entries", "piece_spans", "spans_by_rows"]
