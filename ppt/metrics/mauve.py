"""MAUVE (Pillutla et al., NeurIPS 2021), implemented from the paper with scikit-learn.

Why not the ``mauve-text`` package: its dependencies (faiss-cpu) do install offline here, but it is
GPL-3.0 (ppt is Apache-2.0) and its k-means comes from faiss, so scores would depend on which optional
package is present. This follows the paper's recipe and its reference defaults:

1. features of the generated texts P and reference texts Q (any [n, d] arrays; ppt uses a causal LM's
   last-token hidden state, as the paper does with GPT-2, or a sentence encoder);
2. L2-normalise, PCA fitted on P u Q keeping 90% of the variance;
3. k-means (k = max(2, round(min(|P|, |Q|) / 10)), 5 restarts, 500 iterations) on P u Q, then the
   histograms p, q of cluster labels;
4. divergence curve over mixtures R_l = l p + (1 - l) q for 25 values of l in (0, 1):
   (exp(-c KL(q || R_l)), exp(-c KL(p || R_l))), c = 5, plus the end points (0, 1) and (1, 0);
5. MAUVE = area under that curve.

The score is a corpus statistic (needs tens of texts at least); it varies with the seed of k-means.
"""

from __future__ import annotations

import numpy as np


def _kl(a: np.ndarray, b: np.ndarray) -> float:
    nz = a > 0
    if np.any(b[nz] == 0):
        return float("inf")
    return float(np.sum(a[nz] * np.log(a[nz] / b[nz])))


def quantize(
    p_feats: np.ndarray,
    q_feats: np.ndarray,
    num_buckets: int | str = "auto",
    explained_variance: float = 0.9,
    seed: int = 25,
    n_init: int = 5,
    max_iter: int = 500,
) -> tuple[np.ndarray, np.ndarray]:
    """Histograms (p, q) over shared k-means clusters of the PCA-reduced, normalised features."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import normalize

    p_feats, q_feats = np.asarray(p_feats, np.float64), np.asarray(q_feats, np.float64)
    if len(p_feats) == 0 or len(q_feats) == 0:
        raise ValueError("MAUVE needs at least one text on each side")
    k = max(2, round(min(len(p_feats), len(q_feats)) / 10)) if num_buckets == "auto" else int(num_buckets)
    data = normalize(np.vstack([q_feats, p_feats]), norm="l2", axis=1)
    k = min(k, len(data))
    pca = PCA(n_components=None, whiten=False, random_state=seed + 1).fit(data)
    cum = np.cumsum(pca.explained_variance_ratio_)
    dims = np.argmax(cum >= explained_variance).item() + 1 if cum.size else 1
    reduced = pca.transform(data)[:, :dims]
    labels = KMeans(n_clusters=k, n_init=n_init, max_iter=max_iter, random_state=seed + 2).fit_predict(reduced)
    q_lab, p_lab = labels[: len(q_feats)], labels[len(q_feats) :]
    p = np.bincount(p_lab, minlength=k).astype(np.float64)
    q = np.bincount(q_lab, minlength=k).astype(np.float64)
    return p / p.sum(), q / q.sum()


def divergence_curve(p: np.ndarray, q: np.ndarray, n_points: int = 25, scale: float = 5.0) -> np.ndarray:
    """[(x, y)] = (exp(-c KL(q||R)), exp(-c KL(p||R))) for R = l p + (1 - l) q, with the end points."""
    pts = [(0.0, 1.0)]
    for lam in np.linspace(1e-6, 1 - 1e-6, n_points):
        r = lam * p + (1 - lam) * q
        pts.append((float(np.exp(-scale * _kl(q, r))), float(np.exp(-scale * _kl(p, r)))))
    pts.append((1.0, 0.0))
    return np.asarray(pts)


def area(curve: np.ndarray) -> float:
    """Area under the (monotone) divergence curve: trapezoids along x (points by x ascending, ties by
    y descending, so vertical steps add nothing) and along y likewise, averaged."""
    x, y = curve[:, 0], curve[:, 1]
    ix = np.lexsort((-y, x))
    iy = np.lexsort((-x, y))
    return float(0.5 * (np.trapezoid(y[ix], x[ix]) + np.trapezoid(x[iy], y[iy])))


def mauve(
    p_feats: np.ndarray,
    q_feats: np.ndarray,
    num_buckets: int | str = "auto",
    seed: int = 25,
    scale: float = 5.0,
    n_points: int = 25,
) -> dict:
    """{"mauve", "num_buckets", "p_hist", "q_hist"} for generated (P) vs reference (Q) features."""
    p, q = quantize(p_feats, q_feats, num_buckets=num_buckets, seed=seed)
    score = area(divergence_curve(p, q, n_points, scale))
    return {
        "mauve": min(1.0, max(0.0, score)),
        "num_buckets": int(p.shape[0]),
        "p_hist": p.tolist(),
        "q_hist": q.tolist(),
    }
