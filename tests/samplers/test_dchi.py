"""d_chi noise: the radius law, the uniform direction, the density-ratio bound it exists for, clipping.

Statistical tests use fixed seeds and alpha = 1e-6, and each has a mutation twin: the same test run on a
mis-scaled sampler (noise halved, i.e. eta doubled) must reject, so none of them can pass vacuously.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from ppt.rng import record_generator
from ppt.samplers.dchi import clip_norms, dchi_noise, dchi_noise_seeded, privatize, snap_step

ALPHA = 1e-6


def radius_pvalue(noise: np.ndarray, d: int, eta: float) -> float:
    r = np.linalg.norm(noise, axis=1)
    return stats.kstest(r, stats.gamma(a=d, scale=1 / eta).cdf).pvalue


@pytest.mark.parametrize("d,eta", [(1, 3.0), (8, 1.0), (384, 100.0)])
def test_radius_is_gamma_d_over_eta(d, eta):
    noise = dchi_noise_seeded(20_000, d, eta, seed=11)
    assert radius_pvalue(noise, d, eta) > ALPHA
    # mutation: half the noise (eta doubled) or a per-coordinate Laplace draw must be rejected
    assert radius_pvalue(dchi_noise_seeded(20_000, d, 2 * eta, seed=11), d, eta) < ALPHA
    if d > 1:
        lap = np.random.default_rng(11).laplace(scale=1 / eta, size=(20_000, d))
        assert radius_pvalue(lap, d, eta) < ALPHA


@pytest.mark.parametrize("d", [2, 3, 16])
def test_direction_is_uniform(d):
    n = 40_000
    z = dchi_noise_seeded(n, d, 1.0, seed=5)
    v = z / np.linalg.norm(z, axis=1, keepdims=True)
    # moments: E v = 0, E v v^T = I / d (5-sigma-ish bounds at n = 40k)
    assert np.abs(v.mean(0)).max() < 6 / math.sqrt(n)
    cov = v.T @ v / n
    assert np.abs(cov - np.eye(d) / d).max() < 8 / math.sqrt(n)
    # projection on a fixed unit vector u: (<v, u> + 1) / 2 ~ Beta((d-1)/2, (d-1)/2) for uniform v
    u = np.random.default_rng(1).standard_normal(d)
    u /= np.linalg.norm(u)
    t = (v @ u + 1) / 2
    a = (d - 1) / 2
    assert stats.kstest(t, stats.beta(a, a).cdf).pvalue > ALPHA
    # mutation: a direction biased towards one axis is rejected
    w = v + 0.05 * u
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    assert stats.kstest((w @ u + 1) / 2, stats.beta(a, a).cdf).pvalue < ALPHA


def ratio_audit(eta_true: float, eta_claim: float, d: int, delta: float = 2.0, n: int = 1_000_000) -> float:
    """Largest certified log density ratio between the releases of x = 0 and x' = delta * e1.

    The noisy outputs are projected on e1 (post-processing, so the bound still holds) and binned; for
    each bin with enough mass, |log(n1 / n2)| minus a normal-approximation margin at alpha = 1e-6
    (Bonferroni over bins) is a lower confidence bound on the true log ratio there."""
    y1 = dchi_noise_seeded(n, d, eta_true, seed=101)[:, 0]
    y2 = dchi_noise_seeded(n, d, eta_true, seed=202)[:, 0] + delta
    edges = np.linspace(-6 * d / eta_claim, 6 * d / eta_claim + delta, 41)
    c1, _ = np.histogram(y1, edges)
    c2, _ = np.histogram(y2, edges)
    ok = (c1 >= 50) & (c2 >= 50)
    lr = np.abs(np.log(c1[ok] / c2[ok]))
    margin = stats.norm.isf(ALPHA / (2 * ok.sum())) * np.sqrt(1 / c1[ok] + 1 / c2[ok])
    return float((lr - margin).max())


@pytest.mark.parametrize("d", [2, 4])
def test_density_ratio_bounded_by_exp_eta_distance(d):
    eta, delta = 1.0, 2.0
    assert ratio_audit(eta, eta, d, delta) <= eta * delta
    # mutation: the radius mis-scaled by half (eta doubled) breaks the claimed bound, and the audit sees it
    assert ratio_audit(2 * eta, eta, d, delta) > eta * delta


def test_clip_keeps_norms_within_bound():
    x = torch.randn(3, 7, 16) * 5
    c = 2.5
    y = clip_norms(x, c)
    assert (y.norm(dim=-1) <= c * (1 + 1e-6)).all()
    small = torch.randn(4, 16) * 0.01
    assert torch.equal(clip_norms(small, c), small)  # rows inside the ball are untouched
    gens = [record_generator(0, i) for i in range(3)]
    noisy, z = privatize(x, 0.5, gens, c)
    assert (noisy.norm(dim=-1) <= c * (1 + 1e-5)).all()
    assert torch.allclose(noisy - x, z)


def test_no_low_bit_channel_outputs_on_one_grid_whatever_the_input():
    """Row 14 of the second reading: a float32 x + fl(z) is a multiple of ulp(x) wherever |x + z| << |x|, so an
    output finer than ulp(0.05) was impossible from a clean coordinate 0.05 and frequent from 0.0031 (2,778 in
    1.5M). Snapped to one grid coarser than every float32 ulp in the ball, no output tells the two apart."""
    d, n, eta, bound = 384, 40, 60.0, 16.0  # the clip is inactive (||z|| ~ d / eta = 6.4 < 16)
    step = snap_step(bound)
    ulp_005 = float(np.spacing(np.float32(0.05)))
    for clean in (0.05, 0.0031):
        x = torch.full((n, 1, d), clean, dtype=torch.float32)
        noisy, _ = privatize(x, eta, [record_generator(5, i) for i in range(n)], bound)
        y = noisy.double().numpy().ravel()
        fine = (np.abs(y) < 0.0031 / 4) & (np.remainder(y, ulp_005) != 0)
        assert not fine.any()  # the event that separated the inputs never happens
        assert np.all(np.remainder(y, step) == 0)  # every coordinate on the one grid


def test_snapped_release_keeps_the_distribution():
    """The snap moves each coordinate by at most half a step (~1e-6 here): the noise's law is unchanged."""
    x = torch.zeros(200, 1, 32)
    noisy, _ = privatize(x, 2.0, [record_generator(9, i) for i in range(200)], 1e3)
    raw = dchi_noise((200, 1, 32), 2.0, [record_generator(9, i) for i in range(200)], dtype=torch.float64)
    assert (noisy.double() - raw).abs().max() <= snap_step(1e3) / 2 + 1e-12


def test_per_record_generators_batch_independent_and_inf():
    shape = (3, 5, 8)
    a = dchi_noise(shape, 2.0, [record_generator(7, i) for i in range(3)])
    b = dchi_noise((1, 5, 8), 2.0, [record_generator(7, 2)])
    assert torch.equal(a[2], b[0])
    assert not torch.equal(a[0], a[1])
    x = torch.randn(2, 4, 8)
    noisy, z = privatize(x, math.inf, [record_generator(0, i) for i in range(2)], 1.0)
    assert torch.equal(noisy, x) and not z.any()
    with pytest.raises(ValueError):
        dchi_noise(shape, 0.0, [record_generator(0, i) for i in range(3)])


def test_padding_does_not_change_a_records_rows():
    assert np.array_equal(dchi_noise_seeded(5, 8, 1.0, 3), dchi_noise_seeded(12, 8, 1.0, 3)[:5])
