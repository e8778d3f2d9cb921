"""Confidence bounds for the auditor: Clopper-Pearson for counts, KL-Chernoff for means of [0, 1] draws.

Why two: an end-to-end count (how often the sampler printed y) is binomial, and its exact interval is
Clopper-Pearson. RANTEXT's output probability given the radius is computed exactly for each sampled
radius, so what is estimated is the mean of values in [0, 1]; for such means the binomial Chernoff
bound in KL form holds (Hoeffding 1963, Thm. 1), which is what :func:`kl_bounds` inverts.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def clopper_pearson(k, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Two one-sided Clopper-Pearson bounds, each at level ``alpha``: (lower, upper) for k successes in n."""
    k = np.asarray(k, dtype=np.float64)
    lo = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1)), 1.0)
    return lo, hi


def _kl(p: float, q: float) -> float:
    def t(a: float, b: float) -> float:
        return 0.0 if a == 0 else a * math.log(a / b)

    return t(p, q) + t(1 - p, 1 - q)


def kl_bounds(mean: float, n: int, alpha: float) -> tuple[float, float]:
    """One-sided bounds (each at level ``alpha``) on the mean of n iid draws in [0, 1] with sample mean
    ``mean``: the q with n * KL(mean || q) = ln(1 / alpha) below and above ``mean``."""
    mean = min(max(float(mean), 0.0), 1.0)
    c = math.log(1.0 / alpha) / n

    def solve(a: float, b: float, inside_at_a: bool) -> float:
        for _ in range(200):
            m = 0.5 * (a + b)
            if (_kl(mean, m) <= c) == inside_at_a:
                a = m
            else:
                b = m
        return a

    lo = 0.0 if mean == 0 else (0.0 if _kl(mean, 1e-300) <= c else solve(mean, 0.0, True))
    hi = 1.0 if mean == 1 else (1.0 if _kl(mean, 1 - 1e-16) <= c else solve(mean, 1.0, True))
    return lo, hi


def log_ratio(lo: float, hi: float) -> float:
    """ln(lo / hi) with the conventions of a certified bound: -inf when lo is 0, +inf when hi is 0."""
    if lo <= 0:
        return -math.inf
    if hi <= 0:
        return math.inf
    return math.log(lo) - math.log(hi)


__all__ = ["clopper_pearson", "kl_bounds", "log_ratio"]
