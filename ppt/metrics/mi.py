"""Mutual information between two sets of vectors (e.g. clean and noisy embeddings), estimated with the
Kraskov-Stoegbauer-Grassberger estimator (algorithm 1), built on the Kozachenko-Leonenko nearest-neighbour
entropy estimator, which is also here.

Why KSG: it needs no density model and is consistent for continuous variables; its errors in the joint
space partly cancel, so it is much less biased than I = H(X) + H(Y) - H(X, Y) from three KL entropies.
Caveat (stated with every figure): in hundreds of dimensions with thousands of samples every
nearest-neighbour estimator is biased towards 0 and saturates near log(N); use it to compare settings
(eta) on the same N, not as an absolute number of nats. Neighbour search is sklearn's (KD/ball trees,
max-norm), digamma is scipy's; nothing loops over samples in Python.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import digamma, gammaln


def _as_2d(a) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    return a[:, None] if a.ndim == 1 else a


def kl_entropy(x, k: int = 3) -> float:
    """Kozachenko-Leonenko differential entropy (nats) of samples ``x [n, d]`` (Euclidean balls)."""
    from sklearn.neighbors import NearestNeighbors

    x = _as_2d(x)
    n, d = x.shape
    if n <= k:
        raise ValueError(f"need more than k={k} samples")
    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(x).kneighbors(x)
    eps = np.maximum(dist[:, k], np.finfo(np.float64).tiny)
    log_ball = (d / 2) * math.log(math.pi) - gammaln(d / 2 + 1)  # log volume of the unit d-ball
    return float(digamma(n) - digamma(k) + log_ball + d * np.mean(np.log(eps)))


def ksg_mi(x, y, k: int = 3, jitter: float = 1e-10, seed: int = 0) -> float:
    """KSG (algorithm 1) estimate of I(X; Y) in nats from paired samples ``x [n, dx]``, ``y [n, dy]``.

    A tiny seeded jitter (relative to each variable's scale) breaks ties between duplicate points."""
    from sklearn.neighbors import NearestNeighbors

    x, y = _as_2d(x), _as_2d(y)
    n = x.shape[0]
    if y.shape[0] != n:
        raise ValueError("x and y must have the same number of rows")
    if n <= k:
        raise ValueError(f"need more than k={k} samples")
    rng = np.random.default_rng(seed)
    x = x + jitter * (x.std() or 1.0) * rng.standard_normal(x.shape)
    y = y + jitter * (y.std() or 1.0) * rng.standard_normal(y.shape)
    xy = np.hstack([x, y])
    dist, _ = NearestNeighbors(n_neighbors=k + 1, metric="chebyshev").fit(xy).kneighbors(xy)
    eps = dist[:, k]  # distance to the k-th neighbour in the joint space (max-norm)
    # points strictly closer than eps in each marginal (the point itself excluded)
    r = np.nextafter(eps, 0)
    nx = _count_within(x, r) - 1
    ny = _count_within(y, r) - 1
    return float(max(0.0, digamma(k) + digamma(n) - np.mean(digamma(nx + 1) + digamma(ny + 1))))


def _count_within(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    from sklearn.neighbors import KDTree

    return KDTree(a, metric="chebyshev").query_radius(a, r, count_only=True).astype(np.float64)


def gaussian_mi(rho: float, d: int = 1) -> float:
    """Closed form: I(X; Y) for d independent coordinate pairs with correlation rho (the test reference)."""
    return -d / 2 * math.log(1 - rho * rho)


__all__ = ["gaussian_mi", "kl_entropy", "ksg_mi"]
