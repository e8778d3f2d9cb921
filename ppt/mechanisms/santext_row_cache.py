"""SanText's row cache: the prepared rows of frequent words, kept across batches (least recently used out).

Why: a prepared row is a pure function of (word, eps, space), so a word met again is sampled in place
instead of recomputing its distances, and no output changes (tests/mechanisms/test_santext.py).
"""

from __future__ import annotations

from ppt.lazy import lazy_module
from ppt.mechanisms.santext_sampling import BAND_NATS, MAX_GAP

torch = lazy_module("torch")


class RowCache:
    """Prepared rows of frequent words kept across batches, least recently used evicted, in fixed tensors
    (``slots`` rows allocated once; memory pages are touched only as rows are stored). A slot holds a
    one-band row's cumulative weights (``n_bands`` 0) or a banded row's weights, bands, totals, offsets.
    A row is admitted the second time it is computed: words seen once (most rare words) cost no copy."""

    max_bands = int(MAX_GAP // BAND_NATS) + 1

    @classmethod
    def slots_for(cls, cap_bytes: int, width: int) -> int:
        return max(0, int(cap_bytes) // (9 * width + 16 * cls.max_bands + 32))

    def __init__(self, vocab: int, width: int, slots: int, device):
        self.device = torch.device(device)
        kw = {"device": self.device}
        self.row = torch.empty((slots, width), dtype=torch.float64, **kw)
        self.band = torch.empty((slots, width), dtype=torch.uint8, **kw)
        self.totals = torch.zeros((slots, self.max_bands), dtype=torch.float64, **kw)
        self.offsets = torch.zeros((slots, self.max_bands), dtype=torch.float64, **kw)
        self.n_bands = torch.zeros(slots, dtype=torch.int64, **kw)
        self.slot_of = torch.full((vocab,), -1, dtype=torch.int64, **kw)
        self.row_of = torch.full((slots,), -1, dtype=torch.int64, **kw)
        self.stamp = torch.full((slots,), -1, dtype=torch.int64, **kw)  # -1: free
        self.seen = torch.zeros(vocab, dtype=torch.bool, **kw)  # computed before (admitted if computed again)
        self.clock = 0

    def put(
        self,
        rows: torch.Tensor,
        row: torch.Tensor,
        band: torch.Tensor | None,
        totals: torch.Tensor | None,
        offsets: torch.Tensor | None,
    ) -> None:
        """Store the prepared rows computed before (``seen``) in the least recently used slots that the
        current batch does not use."""
        idx = torch.nonzero(self.seen[rows]).squeeze(1)
        self.seen[rows] = True
        k = min(idx.numel(), int((self.stamp < self.clock).sum()))
        if k == 0:
            return
        idx, rows = idx[:k], rows[idx[:k]]
        victims = torch.topk(self.stamp, k, largest=False).indices
        old = self.row_of[victims]
        self.slot_of[old[old >= 0]] = -1
        self.row[victims] = row[idx]
        if band is None:
            self.n_bands[victims] = 0
        else:
            nb = totals.shape[1]
            self.band[victims] = band[idx]
            self.totals[victims] = 0.0
            self.offsets[victims] = 0.0
            self.totals[victims, :nb] = totals[idx]
            self.offsets[victims, :nb] = offsets[idx]
            self.n_bands[victims] = nb
        self.slot_of[rows] = victims
        self.row_of[victims] = rows
        self.stamp[victims] = self.clock
