"""Nearest-token inversion of Split-N-Denoise's noisy token rows: what the server could read back.

The server sees x~ = clip(E[t] + z) for every token t; the obvious attack maps each row to the
vocabulary rows nearest in L2 (the metric the noise is calibrated in). Top-1 / top-k success rates are
reported with binomial confidence intervals (Wilson by default, Clopper-Pearson on request, from scipy)
over the attacked tokens; special tokens ([CLS], [SEP], BOS...) are excluded, since every text has them.
The search runs in fixed-size GEMM blocks (||q||^2 - 2 q.E + ||E||^2), so memory is bounded by the block.
"""

from __future__ import annotations

import torch

METHODS = {"wilson": "wilson", "clopper-pearson": "exact"}


def nearest_rows(queries: torch.Tensor, table: torch.Tensor, k: int = 10, block: int = 2048) -> torch.Tensor:
    """``[n, k]`` indices of the k rows of ``table`` nearest (L2) to each query, nearest first."""
    k = min(k, table.shape[0])
    table = table.float()
    sq = (table * table).sum(1)
    out = []
    for s in range(0, queries.shape[0], block):
        q = queries[s : s + block].to(table.device, torch.float32)
        d2 = sq[None, :] - 2.0 * (q @ table.T)  # ||q||^2 is the same for every row: not needed to rank
        out.append(d2.topk(k, dim=1, largest=False).indices.cpu())
    return torch.cat(out) if out else torch.zeros((0, k), dtype=torch.long)


def hits(true_ids: torch.Tensor, ranked: torch.Tensor, ks: tuple[int, ...] = (1, 10)) -> dict[int, torch.Tensor]:
    """For each k: a bool ``[n]`` saying whether the true id is among the first k guesses."""
    match = ranked == true_ids[:, None]
    return {k: match[:, :k].any(1) for k in ks}


def rate_ci(successes: int, n: int, confidence: float = 0.95, method: str = "wilson") -> dict:
    """The success rate with a two-sided binomial confidence interval."""
    from scipy.stats import binomtest

    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}")
    if n == 0:
        return {"rate": None, "ci": None, "hits": 0, "n": 0}
    ci = binomtest(int(successes), int(n)).proportion_ci(confidence, METHODS[method])
    return {
        "rate": successes / n,
        "ci": [float(ci.low), float(ci.high)],
        "hits": int(successes),
        "n": int(n),
        "ci_method": method,
        "confidence": confidence,
    }


__all__ = ["METHODS", "hits", "nearest_rows", "rate_ci"]
