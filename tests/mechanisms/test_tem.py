"""TEM: closed form, limits, metric-DP audit, bottom sampling, reproducibility, policies."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from ppt.mechanisms import get_mechanism
from ppt.mechanisms.privacy import privacy_block
from ppt.mechanisms.tem import TEM
from ppt.rng import record_generator
from ppt.samplers.exponential import grouped_searchsorted, sample_from_logits_inverse_cdf
from ppt.spaces.distances import distance_rows

ALPHA = 1e-6
WORDS = (
    "the and apple banana cherry grape lemon mango melon olive peach pear plum berry kiwi lime date fig guava "
    "papaya quince raisin orange apricot almond walnut pecan cashew carrot celery onion garlic ginger pepper "
    "potato tomato radish turnip squash pumpkin"
).split()


@pytest.fixture
def space(array_space):
    return array_space("tiny-tem", WORDS, seed=5, dim=8, scale=0.5)


def dist(space) -> np.ndarray:
    return distance_rows(space, torch.arange(space.size)).double().numpy()


def closed_form(space, eps: float, gamma: float) -> np.ndarray:
    """P[y | x] proportional to exp(-eps/2 * min(d(x, y), gamma)), rows x."""
    w = np.exp(-eps / 2 * np.minimum(dist(space), gamma))
    return w / w.sum(1, keepdims=True)


def eps_for_gamma(space, gamma: float, beta: float = 0.001) -> float:
    return 2.0 / gamma * math.log((1 - beta) / beta * (space.size - 1))


def sample(mech: TEM, x: int, n: int, seed) -> tuple[np.ndarray, dict]:
    out, diag = mech.perturb_rows(torch.full((n,), x), mech.draw(n, record_generator(0, ("sample", seed))))
    return out.numpy(), diag


def chisquare_p(counts: np.ndarray, probs: np.ndarray) -> float:
    n = counts.sum()
    exp = probs * n
    keep = exp >= 5
    obs, ex = list(counts[keep]), list(exp[keep])
    if (~keep).any() and exp[~keep].sum() > 0:
        obs.append(counts[~keep].sum())
        ex.append(exp[~keep].sum())
    ex = np.asarray(ex) * (n / np.sum(ex))
    return float(stats.chisquare(obs, ex).pvalue)


def cp_bounds(k, n, alpha):
    lo = np.where(k > 0, stats.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return lo, hi


def test_gamma_and_validation(space):
    m = TEM(2.0, space=space)
    assert m.gamma == pytest.approx(1.0 * math.log(999 * 39))
    assert TEM(2.0, space=space, beta=0.1).gamma == pytest.approx(math.log(9 * 39))
    assert m.params()["beta"] == 0.001 and m.params()["gamma"] == m.gamma
    for bad in [dict(beta=0), dict(beta=1), dict(beta="x")]:  # unknown params, bad eps: test_contract.py
        with pytest.raises(ValueError):
            TEM(1.0, space=space, **bad)
    assert isinstance(get_mechanism("tem", eps=1.0, space=space), TEM)
    assert "metric LDP" in TEM.notion


def test_grouped_searchsorted_matches_direct():
    g = torch.Generator().manual_seed(0)
    seq = torch.rand(7, 30, generator=g, dtype=torch.float64).cumsum(1)
    group = torch.randint(0, 7, (500,), generator=g)
    vals = torch.rand(500, generator=g, dtype=torch.float64) * 16
    for right in (True, False):
        want = torch.searchsorted(seq[group], vals.unsqueeze(1), right=right).squeeze(1)
        assert torch.equal(grouped_searchsorted(seq, group, vals, right), want)


def test_same_draw_as_base_sampler_inside_l(space):
    """Given u, the choice over [L | bottom] is base.sample_from_logits_inverse_cdf's."""
    eps = eps_for_gamma(space, float(np.median(dist(space))))
    m = TEM(eps, space=space)
    n = 20_000  # bottom draws have probability ~beta = 1e-3: ~20 expected, none with probability ~2e-9
    rows = torch.randint(0, space.size, (n,), generator=torch.Generator().manual_seed(1))
    rand = m.draw(n, record_generator(0, 0))
    out, diag = m.perturb_rows(rows, rand)
    d = torch.from_numpy(dist(space))[rows]
    inside = d <= m.gamma
    n_out = space.size - inside.sum(1)
    logits = torch.cat(
        [torch.where(inside, -eps / 2 * d, -math.inf), (-eps / 2 * m.gamma + torch.log(n_out.double()))[:, None]], 1
    )
    col = sample_from_logits_inverse_cdf(logits, torch.as_tensor(rand["u"]))
    bottom = col == space.size
    assert torch.equal(bottom, diag["bottom"])
    assert torch.equal(out[~bottom], col[~bottom])
    assert bottom.any() and (~bottom).any()
    assert not inside[bottom.nonzero().squeeze(1), out[bottom]].any()  # bottom -> a word outside L_x


@pytest.mark.statistical
@pytest.mark.parametrize("quantile", [0.2, 0.6])
def test_distribution_matches_closed_form(space, quantile):
    gamma = float(np.quantile(dist(space), quantile))
    eps = eps_for_gamma(space, gamma)
    m = TEM(eps, space=space)
    assert m.gamma == pytest.approx(gamma)
    probs = closed_form(space, eps, m.gamma)
    for x in (0, 21):
        out, diag = sample(m, x, 60_000, seed=x)
        assert chisquare_p(np.bincount(out, minlength=space.size).astype(float), probs[x]) > ALPHA
        # the bottom is drawn as often as its mass
        outside = dist(space)[x] > m.gamma
        p_bottom = probs[x][outside].sum()
        k = int(diag["bottom"].sum())
        assert stats.binomtest(k, out.size, p_bottom).pvalue > ALPHA


@pytest.mark.statistical
def test_bottom_is_uniform_outside_l(space):
    gamma = float(np.quantile(dist(space), 0.15))
    m = TEM(eps_for_gamma(space, gamma, beta=0.3), space=space, beta=0.3)
    x = 4
    out, diag = sample(m, x, 60_000, seed=2)
    b = out[diag["bottom"].numpy()]
    outside = dist(space)[x] > m.gamma
    assert b.size > 5000
    assert outside[b].all()
    counts = np.bincount(b, minlength=space.size)[outside].astype(float)
    assert stats.chisquare(counts).pvalue > ALPHA


@pytest.mark.statistical
def test_eps_to_zero_is_uniform(space):
    m = TEM(1e-6, space=space)
    out, diag = sample(m, 7, 40_000, seed=3)
    assert not diag["bottom"].any()  # gamma is huge: L_x = V
    counts = np.bincount(out, minlength=space.size).astype(float)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_large_eps_concentrates_on_the_token(space):
    rows = torch.arange(space.size).repeat(50)
    m = TEM(1e4, space=space, beta=1e-9)
    out, _ = m.perturb_rows(rows, m.draw(rows.numel(), record_generator(0, 0)))
    assert torch.equal(out, rows)
    # as eps grows, gamma shrinks with it: P[x | x] tends to 1 - beta (the bottom keeps beta), not to 1
    m = TEM(1e4, space=space, beta=0.01)
    out, diag = m.perturb_rows(rows, m.draw(rows.numel(), record_generator(0, 1)))
    changed = out != rows
    assert torch.equal(changed, diag["bottom"])
    assert stats.binomtest(int(changed.sum()), rows.numel(), 0.01).pvalue > ALPHA


@pytest.mark.statistical
def test_metric_dp_audit(space):
    """P[y|x] <= exp(eps * d(x, x')) P[y|x']: exactly, and as the Clopper-Pearson lower bound of
    the empirical log-ratio (200k draws per input, every output seen)."""
    D = dist(space)
    gamma = float(np.quantile(D, 0.3))
    eps = eps_for_gamma(space, gamma)
    m = TEM(eps, space=space)
    P = closed_form(space, eps, m.gamma)
    logP = np.log(P)
    # exact: every pair, every output
    ratio = np.abs(logP[:, None, :] - logP[None, :, :]).max(2)
    assert np.all(ratio <= eps * D + 1e-6)
    n = 200_000
    order = np.argsort(D[0])
    pairs = [(0, int(order[1])), (0, int(order[5])), (11, 30)]
    tightest = 0.0
    for x, xp in pairs:
        bound = eps * D[x, xp]
        cx = np.bincount(sample(m, x, n, seed=(x, xp, 1))[0], minlength=space.size)
        cxp = np.bincount(sample(m, xp, n, seed=(x, xp, 2))[0], minlength=space.size)
        seen = np.flatnonzero(cx + cxp)
        a = ALPHA / (2 * seen.size)
        for first, second in ((cx, cxp), (cxp, cx)):
            lo, _ = cp_bounds(first[seen], n, a)
            _, hi = cp_bounds(second[seen], n, a)
            with np.errstate(divide="ignore"):
                lcb = np.log(lo / hi)
            assert np.all(lcb <= bound), (x, xp, lcb.max(), bound)
            tightest = max(tightest, float(lcb.max() / bound))
    assert tightest > 0.2  # the audit sees a real part of the allowed ratio


def test_seeded_outputs_independent_of_distance_chunks(space):
    """Batch size and order: test_contract.py; here the distance blocks and OS entropy."""
    m = TEM(3.0, space=space)
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, int(rng.integers(1, 25)))) for _ in range(10)]

    def run(order, batch):
        out = {}
        for s in range(0, len(order), batch):
            part = order[s : s + batch]
            res = m.sanitize_batch([texts[i] for i in part], [record_generator(9, i) for i in part])
            out.update({i: r.text for i, r in zip(part, res)})
        return out

    ids = list(range(len(texts)))
    together = run(ids, 10)
    small = TEM(3.0, space=space, chunk_entries=50)  # one unique id per distance block
    res = small.sanitize_batch(texts, [record_generator(9, i) for i in ids])
    assert {i: r.text for i, r in zip(ids, res)} == together
    long = " ".join(WORDS * 2)
    assert (
        m.sanitize_batch([long], [record_generator(None, 0)])[0].text
        != m.sanitize_batch([long], [record_generator(None, 0)])[0].text
    )


def test_policies_and_accounting(space):
    m = TEM(2.0, space=space)
    res = m.sanitize_batch(["Apple, 2024 zorblax banana and 3.14 the pear!"], [record_generator(1, 0)])[0]
    acc = res.accounting
    assert acc.n_perturbed == 5
    [metric] = privacy_block(m, acc)["proven"]["metric"].values()
    assert metric["eps_per_unit"] == 2.0 and metric["eps"] == pytest.approx(10.0)
    assert acc.kept == {"punct": 2} and acc.digits_replaced == 2 and acc.dropped == {"oov": 1}
    assert "zorblax" not in res.text
    assert acc.extra["truncated_set_size"]["max"] <= space.size
    assert 0 <= acc.extra["bottom_draws"] <= 5
