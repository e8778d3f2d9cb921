"""Accountants and the rendered privacy block: composition rules, dp_accounting results against closed forms,
and mutation sensitivity (composition must not silently drop or undercount an event)."""

from __future__ import annotations

import json
import math
import random

import pytest

from ppt.accounting import (
    AccountingError,
    ClaimedEvent,
    ComposedEvent,
    ConditionalDpEvent,
    EmpiricalBoundEvent,
    GaussianEvent,
    LaplaceEvent,
    MetricDpEvent,
    PoissonSampledEvent,
    PureDpEvent,
    SelfComposedEvent,
    UnprotectedEvent,
    amplify_pure_eps,
    compose,
    pld_epsilon,
    rdp_epsilon,
    render,
)

# ---------------------------------------------------------------------------------------------------------
# closed forms


def exact_rr_delta(eps: float, k: int, target: float) -> float:
    """Tight delta(target) of k-fold composition of eps-DP (binary randomized response; Kairouz et al.)."""
    p = 1.0 / (1.0 + math.exp(eps))  # P[lie]
    total = 0.0
    for j in range(k + 1):
        loss = eps * (k - 2 * j)
        if loss > target:
            total += math.comb(k, j) * p**j * (1 - p) ** (k - j) * (1.0 - math.exp(target - loss))
    return total


def exact_rr_epsilon(eps: float, k: int, delta: float) -> float:
    lo, hi = 0.0, eps * k
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if exact_rr_delta(eps, k, mid) > delta else (lo, mid)
    return hi


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def exact_gaussian_delta(sigma: float, eps: float) -> float:
    """Analytic Gaussian mechanism (Balle & Wang 2018), sensitivity 1."""
    return _phi(-eps * sigma + 1 / (2 * sigma)) - math.exp(eps) * _phi(-eps * sigma - 1 / (2 * sigma))


# ---------------------------------------------------------------------------------------------------------
# basic composition


def test_pure_and_metric_eps_add():
    c = compose([SelfComposedEvent(PureDpEvent(1.5), 4), PureDpEvent(0.5), LaplaceEvent(2.0)])
    assert c.eps == pytest.approx(6.0 + 0.5 + 0.5)
    assert c.eps_per_token == 1.5
    assert c.tokens == 6 and c.delta == 0.0 and c.bounded

    m = compose([SelfComposedEvent(MetricDpEvent(0.5, "L2", 10.0), 3), MetricDpEvent(0.25, "L2", 5.0)])
    assert m.metric["L2"].eps == pytest.approx(1.75)
    assert m.metric["L2"].eps_per_token == 0.5
    assert m.metric["L2"].tokens == 4
    assert m.eps == pytest.approx(35.0)  # worst case over the vocabulary adds like pure eps
    assert m.eps_per_token == 10.0


def test_metric_without_worst_case_leaves_the_proven_total_unknown():
    c = compose([PureDpEvent(1.0), MetricDpEvent(0.5, "L2")])
    assert c.eps is None and c.eps_per_token is None and not c.bounded
    assert c.metric["L2"].eps == 0.5


def test_one_unprotected_token_makes_the_proven_total_unbounded():
    events = [SelfComposedEvent(PureDpEvent(3.0), 100), UnprotectedEvent(1, "kept non-sensitive word")]
    c = compose(events)
    assert c.eps == math.inf and not c.bounded
    assert c.unprotected == {"kept non-sensitive word": 1}
    assert c.eps_per_token == 3.0 and c.tokens == 100  # the protected tokens are still described
    assert render(events)["proven"]["eps"] == "inf"
    assert rdp_epsilon(events, 1e-6) == math.inf
    assert pld_epsilon(events, 1e-6) == math.inf


def test_unprotected_counts_add_by_reason():
    c = compose(
        [
            SelfComposedEvent(ComposedEvent([PureDpEvent(1.0), UnprotectedEvent(2, "stopword")]), 3),
            UnprotectedEvent(1, "stopword"),
            UnprotectedEvent(5, "oov kept"),
            UnprotectedEvent(0, "number"),
        ]
    )
    assert c.unprotected == {"stopword": 7, "oov kept": 5}
    assert c.unprotected_count == 12
    assert c.eps == math.inf


def test_conditional_composes_within_its_condition_and_stays_apart():
    c = compose(
        [
            SelfComposedEvent(ConditionalDpEvent(6.0, "given C_r"), 10),
            ConditionalDpEvent(2.0, "given C_r"),
            ConditionalDpEvent(1.0, "other"),
            PureDpEvent(0.5),
        ]
    )
    assert c.conditional["given C_r"].eps == pytest.approx(62.0)
    assert c.conditional["given C_r"].eps_per_token == 6.0
    assert c.conditional["given C_r"].tokens == 11
    assert c.conditional["other"].eps == 1.0
    assert c.eps == 0.5 and c.tokens == 1  # conditional figures never enter the proven total


def test_claimed_never_enters_a_proven_total():
    c = compose([ClaimedEvent(6.0, "paper"), ClaimedEvent(6.0, "paper")])
    assert c.claimed["paper"].eps == 12.0
    assert c.eps == 0.0 and c.tokens == 0
    with pytest.raises(AccountingError, match="claimed"):
        rdp_epsilon([PureDpEvent(1.0), ClaimedEvent(6.0, "paper")], 1e-6)
    with pytest.raises(AccountingError, match="conditionally"):
        pld_epsilon([ConditionalDpEvent(6.0, "given C_r")], 1e-6)
    with pytest.raises(AccountingError, match="lower bound"):
        rdp_epsilon([EmpiricalBoundEvent(1.0, "m", 0.99)], 1e-6)


def test_empirical_bounds_are_collected_not_added():
    e1 = EmpiricalBoundEvent(8.5, "cp", 0.999)
    c = compose([SelfComposedEvent(e1, 5), EmpiricalBoundEvent(2.0, "exact", 1.0), PureDpEvent(1.0)])
    assert c.empirical == (e1, EmpiricalBoundEvent(2.0, "exact", 1.0))
    assert c.eps == 1.0


def test_poisson_sampled_pure_dp_is_amplified_by_hand():
    assert amplify_pure_eps(1.0, 1.0) == pytest.approx(1.0)
    assert amplify_pure_eps(1.0, 0.0) == 0.0
    c = compose(SelfComposedEvent(PoissonSampledEvent(0.1, PureDpEvent(1.0)), 10))
    assert c.eps == pytest.approx(10 * math.log1p(0.1 * math.expm1(1.0)))
    with pytest.raises(AccountingError, match="Gaussian"):
        compose(GaussianEvent(1.0))
    with pytest.raises(AccountingError, match="Gaussian"):
        compose(PoissonSampledEvent(0.1, GaussianEvent(1.0)))
    with pytest.raises(AccountingError, match="proven"):
        compose(PoissonSampledEvent(0.1, ClaimedEvent(1.0, "p")))


# ---------------------------------------------------------------------------------------------------------
# mutation sensitivity: composition must see every event


def test_composition_is_exact_and_sensitive_to_each_event():
    rng = random.Random(0)
    for _ in range(20):
        epss = [round(rng.uniform(0.1, 5.0), 3) for _ in range(rng.randint(2, 8))]
        events = [PureDpEvent(e) for e in epss]
        c = compose(events)
        assert c.eps == pytest.approx(sum(epss)) and c.tokens == len(epss)
        for i in range(len(events)):  # dropping any one event changes the total by exactly its eps
            dropped = compose(events[:i] + events[i + 1 :])
            assert dropped.eps == pytest.approx(sum(epss) - epss[i])
            assert dropped.tokens == len(epss) - 1
    # nested structure and counts are not lost either
    nested = ComposedEvent(
        [SelfComposedEvent(ComposedEvent([PureDpEvent(1.0), PureDpEvent(2.0)]), 3), PureDpEvent(4.0)]
    )
    assert compose(nested).eps == pytest.approx(13.0)


def test_library_accountants_grow_with_every_event():
    previous_rdp = previous_pld = 0.0
    for k in (1, 2, 3, 5, 8):
        events = [PureDpEvent(0.5)] * k
        r, p = rdp_epsilon(events, 1e-6), pld_epsilon(events, 1e-6)
        assert r > previous_rdp and p > previous_pld
        previous_rdp, previous_pld = r, p
    g = [GaussianEvent(2.0)] * 3
    assert pld_epsilon(g, 1e-5) > pld_epsilon(g[:2], 1e-5)
    assert rdp_epsilon(g, 1e-5) > rdp_epsilon(g[:2], 1e-5)


# ---------------------------------------------------------------------------------------------------------
# RDP / PLD against closed forms


@pytest.mark.parametrize("eps,k", [(1.0, 10), (0.1, 200), (2.0, 30), (6.0, 5)])
def test_pure_self_composition_matches_the_optimal_composition(eps, k):
    event = SelfComposedEvent(PureDpEvent(eps), k)
    delta = 1e-6
    r, p = rdp_epsilon(event, delta), pld_epsilon(event, delta)
    assert r <= k * eps + 1e-12 and p <= k * eps + 1e-9
    # PLD is pessimistic and tight: never below the exact optimum, above it by at most the discretization
    exact = exact_rr_epsilon(eps, k, delta)
    assert exact_rr_delta(eps, k, p) <= delta * (1 + 1e-6)
    assert exact - 1e-9 <= p <= exact + k * 1e-4 + 1e-3
    assert r >= p - 1e-3  # RDP is a valid but looser bound


def test_rdp_beats_basic_composition_for_many_small_eps():
    assert rdp_epsilon(SelfComposedEvent(PureDpEvent(0.1), 1000), 1e-6) < 0.5 * 100


def test_single_pure_event_and_laplace_give_eps_at_tiny_delta():
    assert pld_epsilon(PureDpEvent(1.0), 1e-12) == pytest.approx(1.0, abs=1e-3)
    assert pld_epsilon(LaplaceEvent(0.5), 1e-12) == pytest.approx(2.0, abs=1e-3)
    assert pld_epsilon(MetricDpEvent(0.5, "L2", 3.0), 1e-12) == pytest.approx(3.0, abs=1e-3)


@pytest.mark.parametrize("sigma", [0.8, 2.0])
def test_gaussian_pld_matches_the_analytic_gaussian(sigma):
    delta = 1e-5
    eps = pld_epsilon(GaussianEvent(sigma), delta)
    assert exact_gaussian_delta(sigma, eps) <= delta * (1 + 1e-6)
    assert exact_gaussian_delta(sigma, eps - 0.01) > delta
    assert rdp_epsilon(GaussianEvent(sigma), delta) >= eps - 1e-6


def test_poisson_subsampling_amplifies():
    g, sg = GaussianEvent(1.0), PoissonSampledEvent(0.01, GaussianEvent(1.0))
    for fn in (rdp_epsilon, pld_epsilon):
        assert fn(SelfComposedEvent(sg, 30), 1e-5) < fn(SelfComposedEvent(g, 30), 1e-5)
    lap, slap = LaplaceEvent(1.0), PoissonSampledEvent(0.1, LaplaceEvent(1.0))
    assert pld_epsilon(slap, 1e-9) < pld_epsilon(lap, 1e-9)
    assert pld_epsilon(slap, 1e-9) == pytest.approx(amplify_pure_eps(1.0, 0.1), abs=1e-3)
    pure, spure = PureDpEvent(1.0), PoissonSampledEvent(0.1, PureDpEvent(1.0))
    for fn in (rdp_epsilon, pld_epsilon):
        assert fn(SelfComposedEvent(spure, 50), 1e-6) < fn(SelfComposedEvent(pure, 50), 1e-6)
    assert pld_epsilon(spure, 1e-12) == pytest.approx(math.log1p(0.1 * math.expm1(1.0)), abs=1e-3)
    # sampling probability 1 is no sampling; 0 releases nothing
    assert pld_epsilon(PoissonSampledEvent(1.0, g), 1e-5) == pytest.approx(pld_epsilon(g, 1e-5))
    assert pld_epsilon(PoissonSampledEvent(0.0, g), 1e-5) == 0.0


def test_unsupported_events_raise_clear_errors():
    with pytest.raises(AccountingError, match="RdpAccountant"):
        rdp_epsilon(PoissonSampledEvent(0.1, LaplaceEvent(1.0)), 1e-5)
    with pytest.raises(AccountingError, match="worst_case_eps"):
        rdp_epsilon(MetricDpEvent(0.5, "L2"), 1e-5)
    with pytest.raises(AccountingError, match="Gaussian"):
        pld_epsilon([PureDpEvent(1.0), GaussianEvent(1.0)], 1e-5)
    with pytest.raises(ValueError, match="delta"):
        rdp_epsilon(PureDpEvent(1.0), 1.5)


# ---------------------------------------------------------------------------------------------------------
# the rendered privacy block


def _all_keys(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + k
            yield from _all_keys(v, prefix + k + ".")
    elif isinstance(obj, list):
        for v in obj:
            yield from _all_keys(v, prefix)


def test_render_headline_holds_only_proven_figures():
    events = [
        SelfComposedEvent(PureDpEvent(3.0), 9),
        ClaimedEvent(777.0, "paper"),
        SelfComposedEvent(ConditionalDpEvent(555.0, "given C_r"), 9),
        EmpiricalBoundEvent(333.0, "clopper-pearson", 0.999999, 20_000),
    ]
    block = render(events)
    assert json.loads(json.dumps(block, allow_nan=False)) == block
    head = block["proven"]
    assert head == {"notion": "eps-LDP", "eps_per_token": 3.0, "tokens": 9, "eps": 27.0, "delta": 0.0}
    assert not {777.0, 555.0 * 9, 555.0, 333.0} & set(v for v in head.values() if isinstance(v, float))
    assert block["claimed"] == [{"source": "paper", "claimed_eps_per_token": 777.0, "claimed_eps": 777.0, "tokens": 1}]
    assert block["conditional"][0]["given"] == "given C_r"
    assert block["conditional"][0]["eps_given"] == pytest.approx(4995.0)
    assert block["empirical"] == [
        {"eps_lower": 333.0, "method": "clopper-pearson", "confidence": 0.999999, "n": 20_000}
    ]
    # no unproven figure shares a key name with the headline's figures
    unproven_keys = {k.split(".")[-1] for k in _all_keys({k: v for k, v in block.items() if k != "proven"})}
    assert not unproven_keys & {"eps", "eps_per_token", "delta"}


def test_render_only_claims_proves_nothing():
    block = render([ClaimedEvent(6.0, "paper")])
    assert block["proven"]["eps"] is None and block["proven"]["notion"] == "none"


def test_render_unprotected_and_metric():
    block = render(
        [SelfComposedEvent(MetricDpEvent(0.5, "GloVe L2", 17.0), 4), UnprotectedEvent(2, "kept non-sensitive word")]
    )
    assert block["proven"]["notion"] == "metric-LDP"
    assert block["proven"]["eps"] == "inf"
    assert block["proven"]["metric"] == {"GloVe L2": {"eps_per_unit": 0.5, "eps": 2.0}}
    assert block["proven"]["eps_per_token"] == 17.0
    assert block["unprotected"] == {"kept non-sensitive word": 2}
    assert set(block) == {"proven", "unprotected"}  # compact: absent sections are left out


def test_render_rounds_proven_up_and_lower_bounds_down():
    eps = math.log1p(0.1 * math.expm1(1.0))  # 0.15856507...
    block = render([PoissonSampledEvent(0.1, PureDpEvent(1.0)), EmpiricalBoundEvent(0.123456789, "m", 0.9)])
    assert block["proven"]["eps"] >= eps and block["proven"]["eps"] - eps < 1e-6
    assert block["empirical"][0]["eps_lower"] <= 0.123456789


def test_render_with_library_accountants():
    events = [SelfComposedEvent(PoissonSampledEvent(0.01, GaussianEvent(1.0)), 100)]
    with pytest.raises(AccountingError):
        render(events)
    with pytest.raises(ValueError, match="delta"):
        render(events, accountant="pld")
    block = render(events, accountant="pld", delta=1e-5)
    assert block["proven"]["notion"] == "(eps,delta)-DP"
    assert block["proven"]["delta"] == 1e-5 and block["proven"]["accountant"] == "pld"
    assert block["proven"]["eps"] == pytest.approx(pld_epsilon(events, 1e-5), rel=1e-5)
    pure = render([SelfComposedEvent(PureDpEvent(0.1), 100), ClaimedEvent(1.0, "p")], accountant="rdp", delta=1e-6)
    assert pure["proven"]["eps"] < 10.0 and pure["proven"]["tokens"] == 100
