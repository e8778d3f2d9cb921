"""Each mechanism declares its privacy events; the stamp's privacy block is rendered from them (issue 16).

One test per finding: 2 (RANTEXT proves nothing per token), 4 (SanText+ kept words unprotected), 5 (Cape's
headline is its provable worst case), 6 (TEM/SanText state metric DP with a unit and a worst case, warn
above 20, default eps that does not pass names through) and 9 (leaks warned, digits_replaced).
"""

import math
import warnings

import pytest

from ppt.accounting import ClaimedEvent, ConditionalDpEvent, MetricDpEvent, PureDpEvent, UnprotectedEvent, compose
from ppt.accounting.events import iter_leaves
from ppt.log import LeakWarning
from ppt.mechanisms.policy import Policy
from ppt.mechanisms.privacy import privacy_block
from ppt.rng import record_generator
from ppt.spaces.distances import diameter_bound

WORDS = [f"zq{a}{b}" for a in "abcdefgh" for b in "abcde"]  # 40 words, frequency = row order


@pytest.fixture
def space(array_space):
    return array_space("privacy-events", WORDS, seed=3, dim=8)


def leaves(events):
    out = []
    for e in events:
        out += [(leaf, n) for leaf, n in iter_leaves(e)]
    return out


def run(mech, text, seed=1):
    [res] = mech.sanitize_batch([text], [record_generator(seed, 0)])
    return res


# ---- finding 2: RANTEXT -------------------------------------------------------------------------------


def test_rantext_headline_proves_nothing_and_n_eps_is_conditional(space):
    from ppt.mechanisms.rantext import Rantext

    mech = Rantext(6.0, space=space, z=5.0)
    res = run(mech, "zqaa zqbb zqcc zqdd")
    n = res.accounting.n_perturbed
    assert n == 4
    kinds = {type(e) for e, _ in leaves(mech.privacy_events(res.accounting))}
    assert kinds == {ConditionalDpEvent}
    c = compose(mech.privacy_events(res.accounting))
    assert c.eps is None or c.tokens == 0  # no proven total: n * eps holds only given C_r
    block = privacy_block(mech, res.accounting)
    assert block["proven"]["eps"] is None and "eps_per_token" not in block["proven"]
    [cond] = block["conditional"]
    assert "C_r" in cond["given"] and cond["eps_given"] == pytest.approx(n * 6.0) and cond["tokens"] == n


# ---- finding 4: SanText+ ---------------------------------------------------------------------------


def test_santext_plus_kept_words_are_unprotected_and_outside_the_composed_eps(space):
    from ppt.mechanisms.santext import SanTextPlus

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeakWarning)
        mech = SanTextPlus(0.5, space=space, w=0.5, p=0.0)  # every non-sensitive word kept
    res = run(mech, "zqaa zqab zqhe")  # rows 0, 1 frequent (kept); row 39 sensitive
    acc = res.accounting
    assert acc.extra["kept_by_mechanism"] == 2 and acc.n_perturbed == 3
    ev = leaves(mech.privacy_events(acc))
    assert (UnprotectedEvent(2, "kept by SanText+ (non-sensitive, 1-p)"), 1) in ev
    assert sum(n for e, n in ev if isinstance(e, MetricDpEvent)) == 1
    block = privacy_block(mech, acc)
    assert block["proven"]["eps"] == "inf" and block["proven"]["tokens"] == 1
    assert block["unprotected"] == {"kept by SanText+ (non-sensitive, 1-p)": 2}
    [metric] = block["proven"]["metric"].values()
    assert metric["eps"] == pytest.approx(0.5)  # one protected word, not three


# ---- finding 5: Cape -------------------------------------------------------------------------------


def test_cape_headline_is_its_worst_case_and_the_paper_figure_a_claim():
    from ppt.mechanisms.accounting import Accounting
    from ppt.mechanisms.cape import Cape
    from ppt.mechanisms.cape.utility import worst_case_eps

    class Stub(Cape):  # the events need only public parameters; no model is loaded
        def __init__(self):
            self.eps, self.worst_case, self.policy = (
                6.0,
                worst_case_eps(6.0, 49152, 50),
                Policy(stopwords="keep", numbers="perturb"),
            )

    mech = Stub()
    acc = Accounting(n_tokens=5, n_perturbed=5, extra={"eps_total_mean": 9.5})
    ev = leaves(mech.privacy_events(acc))
    assert (PureDpEvent(mech.worst_case), 5) in ev and mech.worst_case > 17
    claims = [e for e, _ in ev if isinstance(e, ClaimedEvent)]
    assert claims and all(c.eps == 6.0 for c in claims)  # eps' is data dependent: not in the stamp
    block = privacy_block(mech, acc)
    assert block["proven"]["eps_per_token"] >= mech.worst_case
    assert block["proven"]["eps"] == "inf"  # stopwords kept by the policy: not proven without counts
    assert block["claimed"][0]["claimed_eps_per_token"] == 6.0
    diag = privacy_block(mech, acc, diagnostics=True)
    assert diag["proven"]["eps"] == pytest.approx(5 * mech.worst_case, rel=1e-5)  # no stopword counted
    assert diag["claimed"][0]["claimed_eps"] == pytest.approx(5 * 9.5)


# ---- finding 6: TEM / SanText metric DP ------------------------------------------------------------


@pytest.mark.parametrize("name", ["tem", "santext"])
def test_metric_mechanisms_state_unit_and_worst_case_and_warn_above_20(space, name):
    from ppt.mechanisms import get_mechanism

    d = diameter_bound(space)
    e = space.embeddings.double()
    assert d >= float(__import__("torch").cdist(e, e).max())  # a true upper bound of the diameter
    eps_low, eps_high = 10.0 / d, 30.0 / d
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeakWarning)
        mech = get_mechanism(name, eps_low, space=space)
    with pytest.warns(LeakWarning, match="above 20"):
        get_mechanism(name, eps_high, space=space)
    res = run(mech, "zqaa zqbb")
    [(ev, n)] = leaves(mech.privacy_events(res.accounting))
    assert isinstance(ev, MetricDpEvent) and n == 2 and ev.eps == eps_low
    assert space.name in ev.unit and "distance" in ev.unit
    assert ev.worst_case_eps <= eps_low * d + 1e-9 and ev.worst_case_eps > 0
    block = privacy_block(mech, res.accounting)
    assert block["proven"]["notion"] == "metric-LDP" and block["proven"]["eps_per_token"] >= ev.worst_case_eps


def test_tem_and_santext_defaults_stay_below_the_warning_on_their_default_space():
    """Default eps: no LeakWarning on glove-6b-50d (names passed through 96.6% at TEM's old eps 6, 0% at
    0.8 — measured in CHANGELOG); the worst-case log-ratio eps * D stays at most 20."""
    from ppt.mechanisms import mechanism_class
    from ppt.spaces import load_space

    space = load_space("glove-6b-50d", device="cpu", quiet=True)
    for name in ("tem", "santext", "santext+"):
        cls = mechanism_class(name)
        assert cls.default_eps * diameter_bound(space) <= 20.0, name


# ---- finding 9: leaks and digits -----------------------------------------------------------------


def test_leaks_name_kept_stopwords_and_santext_plus_kept_words(space):
    from ppt.mechanisms.santext import SanTextPlus

    assert any("stopwords" in m for m in Policy(stopwords="keep").leaks())
    assert not any("stopwords" in m for m in Policy().leaks())
    with pytest.warns(LeakWarning, match="non-sensitive"):
        SanTextPlus(0.5, space=space, w=0.9, p=0.3)


def test_random_digits_are_not_counted_as_kept_numbers(space):
    from ppt.mechanisms import get_mechanism

    mech = get_mechanism("tem", 1.0, space=space)
    acc = run(mech, "zqaa 4417 zqbb").accounting
    assert acc.digits_replaced == 1 and "number" not in acc.kept
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeakWarning)
        keep = get_mechanism("tem", 1.0, space=space, policy=Policy(numbers="keep"))
    acc = run(keep, "zqaa 4417 zqbb").accounting
    assert acc.kept.get("number") == 1 and acc.digits_replaced == 0
    # a kept number is unprotected; in the stamp (no counts) the policy alone makes eps infinite
    assert privacy_block(keep, acc)["proven"]["eps"] == "inf"
    assert privacy_block(keep, acc, diagnostics=True)["unprotected"] == {"numbers": 1}
    assert math.isfinite(privacy_block(mech, run(mech, "zqaa zqbb").accounting)["proven"]["eps"])


def test_cape_claim_label_says_what_its_figure_is():
    """Without --diagnostics the claimed figure is the paper's eps alone, and the label says so (second reading,
    row 23); with them it is eps + eps', labelled as such."""
    from types import SimpleNamespace

    from ppt.mechanisms.cape.mechanism import Cape

    me = SimpleNamespace(eps=6.0, worst_case=17.6, CLAIM=Cape.CLAIM, CLAIM_EPS_ONLY=Cape.CLAIM_EPS_ONLY)
    acc = SimpleNamespace(n_perturbed=3, extra={"eps_total_mean": 14.7})
    plain = Cape.privacy_events(me, acc)[1]
    full = Cape.privacy_events(me, acc, diagnostics=True)[1]
    assert plain.event.eps == 6.0 and "eps only" in plain.event.source
    assert full.event.eps == 14.7 and "eps+eps'" in full.event.source and "only" not in full.event.source


def test_santext_plus_charges_the_cross_class_term():
    """A non-sensitive input is resampled with probability p, a sensitive one always: a resampled output costs
    eps * d + ln(1/p) across the classes (second reading, row 20), and the worst case says so."""
    from types import SimpleNamespace

    from ppt.mechanisms.santext import SanText, SanTextPlus

    for p, w, extra in [(0.3, 0.9, math.log(1 / 0.3)), (1.0, 0.9, 0.0), (0.3, 1.0, 0.0)]:
        me = SimpleNamespace(p=p, w=w)
        assert SanTextPlus.cross_class_eps.fget(me) == pytest.approx(extra)
    assert SanTextPlus.worst_case_eps.fget is not SanText.worst_case_eps.fget


def test_santext_plus_stamp_worst_case_is_santexts_plus_ln_1_over_p(array_space):
    from ppt.mechanisms import get_mechanism
    from ppt.mechanisms.accounting import Accounting

    words = ["river", "bank", "money", "stream", "water", "town", "the", "a", "of", "and"]
    space = array_space("cross-class", words, seed=4, dim=6)
    plain = get_mechanism("santext", 1.0, space=space, quiet=True)
    plus = get_mechanism("santext+", 1.0, space=space, w=0.5, p=0.25, quiet=True)
    acc = Accounting(n_tokens=3, n_perturbed=3, extra={"kept_by_mechanism": 0})
    block = privacy_block(plus, acc)
    assert block["proven"]["eps_per_token"] == pytest.approx(plain.worst_case_eps + math.log(4), rel=1e-5)
    assert "ln(1/p)" in next(iter(block["proven"]["metric"]))
