"""SanText's sampler: the exact inverse CDF over one row of weights exp(-gap), in bands of gap.

Why bands: inside a band of ``BAND_NATS`` nats no weight is small enough to be absorbed by the float64
cumulative sum, so every output keeps its own probability down to ~1e-32 of the row (docs/mechanisms/santext.md).
The torch functions run on the mechanism's device; their ``_np`` twins are the CPU backend (no torch import).
"""

from __future__ import annotations

import math

import numpy as np

from ppt.lazy import lazy_module

torch = lazy_module("torch")

from ppt.samplers.portable import LOG2E_GRID, exp2_grid_np, exp2_grid_torch

BAND_NATS = 8.0  # (a power of two: see bands()) width of a band of the inverse CDF, in nats of gap
MAX_GAP = 760.0  # exp(-gap) is 0 in float64 beyond ~745: gaps are clipped here, such an output has probability 0


def neg_exp(gap: torch.Tensor) -> torch.Tensor:
    """exp(-gap) by the portable exponential (:func:`ppt.samplers.portable.exp2_grid_torch`: the exponent on a
    2**-20 grid, the same bits on every CPU, issue 36); 0 below 2**-1021 (so at MAX_GAP)."""
    return exp2_grid_torch(gap * -LOG2E_GRID)


def neg_exp_np(gap: np.ndarray) -> np.ndarray:
    """:func:`neg_exp` in numpy, in place (``gap`` becomes the weights): the same bits."""
    np.multiply(gap, -LOG2E_GRID, out=gap)
    return exp2_grid_np(gap, out=gap)


def search_rows(cdf: torch.Tensor, rows: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Column per position: the first j with cdf[row, j] > r (vectorized binary search over
    nondecreasing rows; r must be below the row's last value)."""
    n_cols = cdf.shape[1]
    flat = cdf.reshape(-1)
    base = rows.to(torch.int64) * n_cols
    lo = torch.zeros_like(base)
    hi = torch.full_like(base, n_cols - 1)
    for _ in range(max(1, math.ceil(math.log2(max(n_cols, 2)))) + 1):
        mid = (lo + hi) // 2
        right = flat[base + mid] <= r
        lo = torch.where(right, mid + 1, lo)
        hi = torch.where(right, hi, mid)
    return lo


def bands(
    gap: torch.Tensor, top: float | None = None
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """(weights exp(-gap), band of each column (uint8; None: all in band 0), band totals [n, B], band offsets
    [n, B]) of gap rows [n, m] (``top``: their maximum, if known).
    ``gap`` may be consumed. The weights are :func:`neg_exp`'s (the same bits on every CPU).

    Band b holds the columns with b * BAND_NATS <= gap < (b + 1) * BAND_NATS; the inverse CDF runs from the
    last band (least likely) to band 0, so band b starts at offset sum_{k > b} total_k."""
    if top is None:
        top = float(gap.max()) if gap.numel() else 0.0
    if top > MAX_GAP:
        gap.clamp_(max=MAX_GAP)
    if top < BAND_NATS:  # one band (small eps, e.g. the default 0.8 on glove-6b-50d): no band index needed
        weight = neg_exp(gap)
        band = None
        # the same scatter-add as below, so a row's total never depends on which rows share its chunk
        zero = torch.zeros((), dtype=torch.int64, device=gap.device).expand(weight.shape)
        totals = torch.zeros((weight.shape[0], 1), dtype=weight.dtype, device=weight.device).scatter_add_(
            1, zero, weight
        )
    else:
        n_bands = int(min(top, MAX_GAP) // BAND_NATS) + 1  # the band of the largest gap, + 1
        # floor(gap / BAND_NATS) as truncation of gap * (1 / BAND_NATS) (gap >= 0): exact, since BAND_NATS
        # is a power of two, so the same as bucketizing against the edges b * BAND_NATS, at a fraction of its
        # cost; uint8 (at most MAX_GAP / BAND_NATS = 95) for the band masks, int64 for the scatter-add
        band = gap.mul(1.0 / BAND_NATS).to(torch.uint8)
        weight = neg_exp(gap)  # 0 at MAX_GAP
        totals = torch.zeros((weight.shape[0], n_bands), dtype=weight.dtype, device=weight.device).scatter_add_(
            1, band.to(torch.int64), weight
        )
    offsets = totals.flip(1).cumsum(1).flip(1) - totals
    return weight, band, totals, offsets


def band_cdf(weight: torch.Tensor, band: torch.Tensor | None, b: int) -> torch.Tensor:
    """Cumulative weights of band b's columns (flat over the other columns), column order."""
    if band is None:  # the one-band case of :func:`bands`
        return weight.cumsum(1)
    return torch.where(band == b, weight, 0.0).cumsum_(1)


def sample_cdf(c: torch.Tensor, at: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Columns drawn from one-band rows held as their cumulative weights ``c`` (rows ``at``): the banded
    inverse CDF of :func:`sample_banded` with one band (offset 0), in fewer passes. A row's total is its
    last cumulative value: the same sequential column-order sum as :func:`bands`' scatter-add
    (tests/mechanisms/test_santext.py checks that both agree)."""
    last = c[at, -1]
    t = torch.minimum(u * last, torch.nextafter(last, torch.zeros_like(last)))
    return search_rows(c, at, t)


def sample_banded(
    weight: torch.Tensor,
    band: torch.Tensor | None,
    totals: torch.Tensor,
    offsets: torch.Tensor,
    at: torch.Tensor,
    u: torch.Tensor,
) -> torch.Tensor:
    """Columns drawn by the banded inverse CDF from rows ``at`` of :func:`bands`' output (totals/offsets
    may carry extra all-zero bands: they are never hit and change no offset)."""
    out = torch.empty_like(at)
    total = offsets[at, 0] + totals[at, 0]
    t = torch.minimum(u * total, torch.nextafter(total, torch.zeros_like(total)))
    # the band holding t: the first (most likely) non-empty band whose offset is <= t
    hit = (t.unsqueeze(1) >= offsets[at]) & (totals[at] > 0)
    pos_band = hit.to(torch.int8).argmax(dim=1)
    for b in torch.unique(pos_band).tolist():
        sel = torch.nonzero(pos_band == b).squeeze(1)
        need, k = torch.unique(at[sel], return_inverse=True)  # the rows with a position in band b
        if 2 * need.numel() > weight.shape[0]:  # most rows: all of them, no copy
            c, k = band_cdf(weight, band, b), at[sel]
        else:
            c = band_cdf(weight[need], None if band is None else band[need], b)
        r = t[sel] - offsets[at[sel], b]
        r = torch.minimum(r.clamp(min=0.0), torch.nextafter(c[k, -1], torch.zeros_like(r)))
        out[sel] = search_rows(c, k, r)
    return out


# ---- the same sampler in numpy (the CPU backend: no torch import) --------------------------------------


def search_rows_np(cdf: np.ndarray, rows: np.ndarray, r: np.ndarray) -> np.ndarray:
    """:func:`search_rows` in numpy: the first j with cdf[row, j] > r."""
    n_cols = cdf.shape[1]
    flat = cdf.reshape(-1)
    base = rows.astype(np.int64) * n_cols
    lo = np.zeros_like(base)
    hi = np.full_like(base, n_cols - 1)
    for _ in range(max(1, math.ceil(math.log2(max(n_cols, 2)))) + 1):
        mid = (lo + hi) // 2
        right = flat[base + mid] <= r
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right, hi, mid)
    return lo


def bands_np(gap: np.ndarray, top: float) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """:func:`bands` in numpy (``gap`` consumed). Band totals are sequential column-order sums per band,
    as the scatter-add."""
    if top > MAX_GAP:
        np.minimum(gap, MAX_GAP, out=gap)
    if top < BAND_NATS:
        weight = neg_exp_np(gap)
        band = None
        totals = np.cumsum(weight, axis=1)[:, -1:].copy()
    else:
        n_bands = int(min(top, MAX_GAP) // BAND_NATS) + 1
        band = (gap * (1.0 / BAND_NATS)).astype(np.uint8)
        weight = neg_exp_np(gap)
        totals = np.stack([np.cumsum(np.where(band == b, weight, 0.0), axis=1)[:, -1] for b in range(n_bands)], axis=1)
    offsets = np.flip(np.cumsum(np.flip(totals, 1), 1), 1) - totals
    return weight, band, totals, offsets


def band_cdf_np(weight: np.ndarray, band: np.ndarray | None, b: int) -> np.ndarray:
    if band is None:
        return np.cumsum(weight, axis=1)
    return np.cumsum(np.where(band == b, weight, 0.0), axis=1)


def sample_cdf_np(c: np.ndarray, at: np.ndarray, u: np.ndarray) -> np.ndarray:
    last = c[at, -1]
    t = np.minimum(u * last, np.nextafter(last, 0.0))
    return search_rows_np(c, at, t)


def sample_banded_np(
    weight: np.ndarray, band: np.ndarray | None, totals: np.ndarray, offsets: np.ndarray, at: np.ndarray, u: np.ndarray
) -> np.ndarray:
    out = np.empty_like(at)
    total = offsets[at, 0] + totals[at, 0]
    t = np.minimum(u * total, np.nextafter(total, 0.0))
    hit = (t[:, None] >= offsets[at]) & (totals[at] > 0)
    pos_band = hit.argmax(axis=1)
    for b in np.unique(pos_band).tolist():
        sel = np.flatnonzero(pos_band == b)
        need, k = np.unique(at[sel], return_inverse=True)
        c = band_cdf_np(weight[need], None if band is None else band[need], b)
        r = t[sel] - offsets[at[sel], b]
        r = np.minimum(np.maximum(r, 0.0), np.nextafter(c[k, -1], 0.0))
        out[sel] = search_rows_np(c, k, r)
    return out
