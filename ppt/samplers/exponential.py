"""Exponential-mechanism draws: Gumbel noise, the inverse-CDF rule and its grouped form.

Why one rule: every mechanism samples with one uniform per position and the inverse CDF (the first
column whose running sum exceeds u times the total), so a record's draws and output never depend on
what else is in its batch or how far the batch pads.
"""

from __future__ import annotations

from ppt.lazy import lazy_module

torch = lazy_module("torch")


def gumbel_from_uniform(u: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise from uniforms in (0, 1)."""
    tiny = torch.finfo(u.dtype).tiny
    return -torch.log(-torch.log(u.clamp(min=tiny, max=1 - 1e-7)))


def sample_from_logits_inverse_cdf(logits: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Sample one column per row of ``logits`` [n, m] (-inf = excluded) with one uniform per row.

    Inverse CDF needs one uniform per position regardless of how many candidates the batch pads to,
    so a record's draws (and thus its output) do not depend on what else is in the batch.
    """
    p = torch.softmax(logits.double(), dim=1)
    cdf = p.cumsum(1)
    # side="right" finds the first column whose cdf exceeds u*total: never a zero-probability column
    target = (u.double().clamp(0.0, 1.0 - 1e-16) * cdf[:, -1]).unsqueeze(1)
    idx = torch.searchsorted(cdf, target, right=True).squeeze(1)
    return idx.clamp_(max=logits.shape[1] - 1)


def grouped_searchsorted(seq: torch.Tensor, group: torch.Tensor, values: torch.Tensor, right: bool) -> torch.Tensor:
    """``searchsorted(seq[group[i]], values[i])`` for every i, without materialising seq[group].

    Positions are grouped by row: one batched searchsorted over [rows, most positions of one row].
    """
    k = group.numel()
    if k == 0:
        return torch.empty(0, dtype=torch.int64, device=seq.device)
    order = torch.argsort(group, stable=True)
    g = group[order]
    counts = torch.bincount(g, minlength=seq.shape[0])
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(k, device=seq.device) - starts[g]
    width = int(counts.max())
    grid = torch.zeros((seq.shape[0], width), dtype=seq.dtype, device=seq.device)
    grid[g, rank] = values[order].to(seq.dtype)
    found = torch.searchsorted(seq, grid, right=right)
    out = torch.empty(k, dtype=torch.int64, device=seq.device)
    out[order] = found[g, rank]
    return out


__all__ = ["gumbel_from_uniform", "grouped_searchsorted", "sample_from_logits_inverse_cdf"]
