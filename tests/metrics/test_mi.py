"""The MI and entropy estimators against Gaussian closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppt.metrics.mi import gaussian_mi, kl_entropy, ksg_mi


def correlated(n: int, d: int, rho: float, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = rho * x + math.sqrt(1 - rho * rho) * rng.standard_normal((n, d))
    return x, y


# KSG is biased low as the dimension grows (Kraskov et al. 2004, fig. 4): the tolerance says by how much
@pytest.mark.parametrize("d,rho,tol", [(1, 0.9, 0.05), (2, 0.8, 0.08), (4, 0.6, 0.2)])
def test_ksg_matches_the_gaussian_closed_form(d, rho, tol):
    x, y = correlated(3000, d, rho, seed=d)
    truth = gaussian_mi(rho, d)
    est = ksg_mi(x, y, k=3)
    assert abs(est - truth) < tol * truth + 0.02, (est, truth)
    # and it is monotone in the dependence: a weaker correlation gives clearly less
    x2, y2 = correlated(3000, d, rho / 2, seed=d)
    assert ksg_mi(x2, y2) < est - 0.2 * truth


def test_independent_is_near_zero():
    rng = np.random.default_rng(0)
    assert ksg_mi(rng.standard_normal((2000, 3)), rng.standard_normal((2000, 3))) < 0.03


def test_kl_entropy_of_a_gaussian():
    d = 3
    x = np.random.default_rng(1).standard_normal((5000, d)) * 2.0
    truth = d / 2 * math.log(2 * math.pi * math.e * 4.0)
    assert abs(kl_entropy(x) - truth) < 0.1
