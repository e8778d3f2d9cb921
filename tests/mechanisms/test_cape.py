"""Cape: utility and bucketized-EM kernels against hand computations and closed forms, limits, privacy
audit on neighbouring utility vectors, keep policies, batching/chunking invariance, the causal and masked
context paths on tiny random models; the real SmolLM2 only in the integration test."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from ppt.mechanisms import get_mechanism
from ppt.mechanisms.cape import CALIBRATION_PROMPTS, CALIBRATION_QUANTILE, Cape
from ppt.mechanisms.cape import utility as cu
from ppt.mechanisms.cape.candidates import candidate_set
from ppt.mechanisms.policy import KEEP, PERTURB
from ppt.mechanisms.privacy import privacy_block
from ppt.rng import record_generator
from ppt.testing import bpe_tokenizer, tiny_bert, tiny_llama, wordpiece_tokenizer

ALPHA = 1e-6

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Alice moved to Paris in 2019 to study medicine at the university.",
    "Please summarize the following meeting notes for the team, thanks!",
    "My phone number is 555 0199 and my email is alice at example dot com.",
    "It's slow - very, very slow. The doctor said the results were fine.",
    "the and of at to in is the, and of the. And the doctor at the office, and of the team.",
] * 3

TEXTS = [
    "Alice moved to Paris in 2019 to study medicine.",
    "The doctor said the results were fine, thanks!",
    "",
    "My email is alice at example dot com.",
    "It's slow - very, very slow.",
]


# ---- tiny models ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def causal():
    tok = bpe_tokenizer(
        CORPUS, 300, ["<|endoftext|>"], eos_token="<|endoftext|>", bos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    model = tiny_llama(len(tok), seed=0, max_position_embeddings=32, tie_word_embeddings=True)
    with torch.no_grad():  # make logits spread so the logit term matters
        model.get_input_embeddings().weight.mul_(20)
    return model, tok


@pytest.fixture(scope="module")
def masked():
    tok = wordpiece_tokenizer(CORPUS, 200)
    return tiny_bert(len(tok), seed=1, max_position_embeddings=24), tok


@pytest.fixture(scope="module")
def cape_causal(causal):
    return Cape(3.0, model=causal)


def gens(seed, n, start=0):
    return [record_generator(seed, i) for i in range(start, start + n)]


# ---- independent closed form (numpy, from the definition) ----------------------------------------


def np_closed_form(u: np.ndarray, eps: float, delta: float, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """P(r) and bucket ids for one utility vector, written from the definition without the kernels."""
    lo, hi = u.min(), u.max()
    width = (hi - lo) / nb
    if hi == lo:
        b = np.zeros(len(u), dtype=int)
    else:
        b = np.minimum(np.floor((u - lo) / width), nb - 1).astype(int)
    p = np.zeros(len(u))
    ks = np.unique(b)
    means = np.array([u[b == k].mean() for k in ks])
    w = np.exp(eps * means / (2 * delta))
    w /= w.sum()
    for k, wk in zip(ks, w):
        p[b == k] = wk / (b == k).sum()
    return p, b


def draw(u: torch.Tensor, eps: float, nb: int, n: int, seed: int, delta: float = 1.0) -> np.ndarray:
    g = torch.Generator().manual_seed(seed)
    r = torch.rand((n, 2), generator=g, dtype=torch.float64)
    cols, _ = cu.sample_bucketized(u.expand(n, -1).contiguous(), eps, delta, nb, r[:, 0], r[:, 1])
    return cols.numpy()


def chisquare_p(counts: np.ndarray, probs: np.ndarray) -> float:
    """Goodness-of-fit p-value, pooling cells with expected count < 5."""
    n = counts.sum()
    exp = probs * n
    small = exp < 5
    if small.any():
        counts = np.append(counts[~small], counts[small].sum())
        exp = np.append(exp[~small], exp[small].sum())
    keep = exp > 0
    assert counts[~keep].sum() == 0, "samples where the closed form says probability 0"
    return stats.chisquare(counts[keep], exp[keep] * counts[keep].sum() / exp[keep].sum()).pvalue


# skewed utilities (many low, few high), like a real row; no value sits within 1e-3 of a bucket edge
# for the bucket counts used below, so float32 vs float64 cannot move a candidate across an edge
U_FIXED = torch.from_numpy(np.sort(np.random.default_rng(4).random(20) ** 2)).float()


def _edge_margin(u: np.ndarray, nb: int) -> float:
    x = (u - u.min()) / (u.max() - u.min()) * nb
    inner = x[(x > 0) & (x < nb)]
    return float(np.abs(inner - np.round(inner)).min())


def test_fixed_utilities_are_away_from_bucket_edges():
    for nb in (5, 6, 10, 50):
        assert _edge_margin(U_FIXED.double().numpy(), nb) > 1e-3


# ---- kernels: hand computations ------------------------------------------------------------------


def test_bucket_assignment_by_hand_with_empty_buckets():
    u = torch.tensor([[0.0, 0.1, 0.5, 0.95, 1.0], [3.0, 3.0, 3.0, 3.0, 3.0], [1.0, 0.0, 0.24, 0.25, 0.74]])
    b, counts, means = cu.bucketize(u, 4)
    assert b.tolist() == [[0, 0, 2, 3, 3], [0, 0, 0, 0, 0], [3, 0, 0, 1, 2]]
    assert counts.tolist() == [[2, 0, 1, 2], [5, 0, 0, 0], [2, 1, 1, 1]]
    assert means[0].tolist() == pytest.approx([0.05, 0.0, 0.5, 0.975])
    assert means[1, 0].item() == pytest.approx(3.0)
    assert means[2].tolist() == pytest.approx([0.12, 0.25, 0.74, 1.0])
    # empty bucket excluded from the draw
    z = cu.bucket_logits(counts, means, eps=2.0, delta_u=1.0)
    assert math.isinf(z[0, 1]) and z[0, 1] < 0
    assert z[0, 2].item() == pytest.approx(2.0 * 0.5 / 2)
    # one bucket: everything in it
    b1, c1, _ = cu.bucketize(u, 1)
    assert (b1 == 0).all() and c1[:, 0].tolist() == [5, 5, 5]


def test_utility_terms_and_forms_by_hand():
    logits = torch.tensor([[-10.0, -1.0, 0.0, 2.0, 10.0]])
    lt = cu.logit_term(logits, 2.0)
    assert lt.tolist() == [[0.0, 0.25, 0.5, 1.0, 1.0]]
    dist = torch.tensor([[0.0, 1.0, 2.0, 4.0, 4.0]])
    dt = cu.distance_term(dist)  # d_max = 4 for this row
    expect_d = np.exp(-np.array([0, 1, 2, 4, 4]) / 4.0)
    assert dt[0].numpy() == pytest.approx(expect_d)
    prod = cu.combine(lt, dt, 0.5, 1.0, "product")
    assert prod[0].numpy() == pytest.approx(np.sqrt([0, 0.25, 0.5, 1, 1]) * expect_d)
    add = cu.combine(lt, dt, 0.5, 1.0, "additive")
    assert add[0].numpy() == pytest.approx(0.5 * np.array([0, 0.25, 0.5, 1, 1]) + expect_d)
    assert cu.sensitivity("product", 0.5, 1.0) == 1.0
    assert cu.sensitivity("additive", 0.5, 1.0) == 1.5
    # lambda_L = 0: distance only (0^0 would be 1 anyway; L~ = 0 must not zero the utility)
    only_d = cu.combine(lt, dt, 0.0, 1.0, "product")
    assert only_d[0].numpy() == pytest.approx(expect_d)
    # a row of zeros (original = only candidate direction) gives D = 1, not NaN
    assert cu.distance_term(torch.zeros(1, 3)).tolist() == [[1.0, 1.0, 1.0]]
    with pytest.raises(ValueError):
        cu.combine(lt, dt, 0.5, 1.0, "max")


def test_eps_prime_by_hand():
    counts = torch.tensor([[2, 0, 1, 2], [5, 0, 0, 0], [3, 1, 6, 0]])
    assert cu.eps_prime(counts).tolist() == pytest.approx([math.log(2), 0.0, math.log(6)])
    _, diag = cu.sample_bucketized(
        torch.tensor([[0.0, 0.1, 0.5, 0.95, 1.0]]), 1.0, 1.0, 4, torch.tensor([0.3]), torch.tensor([0.3])
    )
    assert diag["eps_prime"].item() == pytest.approx(math.log(2))
    assert diag["n_nonempty"].item() == 3


def test_member_selection_is_the_kth_member_in_column_order():
    # bucket 3 (top, count 3) is certain at huge eps; the member uniform picks the j-th of its columns
    u = torch.tensor([[1.0, 0.0, 0.97, 0.1, 0.99, 0.5]])
    top_cols = [0, 2, 4]
    for j, col in enumerate(top_cols):
        for frac in (1e-9, 0.5, 1 - 1e-9):
            r = torch.tensor([(j + frac) / 3], dtype=torch.float64)
            cols, diag = cu.sample_bucketized(u, 1e6, 1.0, 4, torch.tensor([0.5]), r)
            assert cols.item() == col and diag["bucket_size"].item() == 3
    # vectorized over rows with different buckets and sizes
    rows = torch.tensor([[0.0, 1.0, 0.2, 0.9], [1.0, 1.0, 0.0, 1.0], [0.3, 0.3, 0.3, 0.3]])
    cols, _ = cu.sample_bucketized(rows, 1e6, 1.0, 2, torch.full((3,), 0.5), torch.tensor([0.99, 0.5, 0.6]))
    assert cols.tolist() == [3, 1, 2]


# ---- kernels: distributions ----------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("eps,nb", [(3.0, 6), (8.0, 50)])
def test_sampler_matches_closed_form(eps, nb):
    u = U_FIXED
    p, _ = np_closed_form(u.double().numpy(), eps, 1.0, nb)
    assert cu.closed_form(u.unsqueeze(0), eps, 1.0, nb)[0].numpy() == pytest.approx(p, rel=1e-6)
    cols = draw(u.unsqueeze(0), eps, nb, 200_000, seed=11)
    counts = np.bincount(cols, minlength=len(u))
    assert chisquare_p(counts, p) > ALPHA


@pytest.mark.statistical
def test_eps_to_zero_is_uniform_over_buckets_then_members():
    u = U_FIXED
    nb = 5
    _, b = np_closed_form(u.double().numpy(), 1.0, 1.0, nb)
    sizes = np.bincount(b, minlength=nb)
    nonempty = (sizes > 0).sum()
    expect = 1.0 / (nonempty * sizes[b])  # uniform bucket, then uniform member
    assert cu.closed_form(u.unsqueeze(0), 1e-9, 1.0, nb)[0].numpy() == pytest.approx(expect, rel=1e-6)
    cols = draw(u.unsqueeze(0), 1e-9, nb, 100_000, seed=12)
    assert chisquare_p(np.bincount(cols, minlength=len(u)), expect) > ALPHA
    # with one candidate per bucket that is uniform over candidates
    u_spread = torch.linspace(0, 1, 10)
    assert cu.closed_form(u_spread.unsqueeze(0), 1e-9, 1.0, 10)[0].numpy() == pytest.approx(np.full(10, 0.1), rel=1e-6)


@pytest.mark.statistical
def test_large_eps_concentrates_on_top_bucket_uniformly():
    u = U_FIXED
    nb = 10
    _, b = np_closed_form(u.double().numpy(), 1.0, 1.0, nb)
    top = np.flatnonzero(b == b.max())
    assert len(top) >= 2
    cols = draw(u.unsqueeze(0), 2000.0, nb, 40_000, seed=13)
    assert set(np.unique(cols)) == set(top.tolist())
    assert chisquare_p(np.bincount(cols, minlength=len(u))[top], np.full(len(top), 1 / len(top))) > ALPHA


# ---- privacy -------------------------------------------------------------------------------------


def _clopper_pearson(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    lo = np.where(k > 0, stats.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return lo, hi


def _neighbours(seed: int, v: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Pairs of utility vectors in [0, 1] that differ by at most Delta_u = 1 per candidate (the utility
    of every candidate can change when the original token changes: the distance term moves)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(v, generator=g)
    pairs = [(a, (a + 0.3 * torch.rand(v, generator=g)).clamp(0, 1))]  # small shift
    pairs.append((a, torch.rand(v, generator=g)))  # unrelated utilities (any change is within the range)
    # the pair found by search where the paper's eps + eps' is exceeded (see the next test)
    pairs.append((torch.tensor([0.0, 0.0, 0.25, 0.25, 1.0]), torch.tensor([0.0, 0.25, 0.5, 1.0, 0.0])))
    return pairs


@pytest.mark.statistical
@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.slow(reason="a statistical audit: many draws per eps")
def test_privacy_audit_neighbouring_utilities(eps):
    """Empirical log-ratios on every output seen, lower confidence bound, never above the claim."""
    nb, n = 4, 200_000
    for i, (x, y) in enumerate(_neighbours(21, 8)):
        v = x.numel()
        _, cx, _ = cu.bucketize(x.unsqueeze(0), nb)
        _, cy, _ = cu.bucketize(y.unsqueeze(0), nb)
        claim = float(cu.pairwise_bound(cx, cy, eps))  # eps + eps'(x) + eps'(y): what the accounting can stand on
        # exact probabilities respect it
        px = cu.closed_form(x.unsqueeze(0), eps, 1.0, nb)[0]
        py = cu.closed_form(y.unsqueeze(0), eps, 1.0, nb)[0]
        exact = (px.log() - py.log()).abs().max().item()
        assert exact <= claim + 1e-9
        assert exact <= cu.worst_case_eps(eps, v, nb) + 1e-9
        # empirical audit
        kx = np.bincount(draw(x.unsqueeze(0), eps, nb, n, seed=100 + i), minlength=v)
        ky = np.bincount(draw(y.unsqueeze(0), eps, nb, n, seed=200 + i), minlength=v)
        lo_x, hi_x = _clopper_pearson(kx, n, ALPHA)
        lo_y, hi_y = _clopper_pearson(ky, n, ALPHA)
        seen = (kx > 0) & (ky > 0)
        lcb = np.maximum(np.log(lo_x[seen] / hi_y[seen]), np.log(lo_y[seen] / hi_x[seen]))
        assert lcb.max() <= claim, (i, lcb.max(), claim)
        # and the audit is not vacuous: it sees a good part of the true privacy loss
        assert lcb.max() >= 0.5 * exact - 0.05


@pytest.mark.statistical
@pytest.mark.slow(reason="a statistical audit: many draws of Cape with its context model")
def test_privacy_audit_real_neighbours(cape_causal):
    """Neighbouring inputs as the mechanism sees them: the same context (logits) at one position, the
    original token t changed to t' (the distance term moves). Every output seen, both directions."""
    c = cape_causal
    toks = c.tokenizer.tokenize(TEXTS[0])
    pos = np.flatnonzero(c.plan(toks)[0] == PERTURB)[2:3]
    feats = c.lm.features([toks.ids], [pos])
    t = int(toks.ids[pos[0]])
    t2 = int(c.candidates[(c.candidates != t).nonzero()[7]].item())
    ux = c.utilities(c.lm.candidate_logits(feats), torch.tensor([t]))
    uy = c.utilities(c.lm.candidate_logits(feats), torch.tensor([t2]))
    _, cx, _ = cu.bucketize(ux, c.buckets)
    _, cy, _ = cu.bucketize(uy, c.buckets)
    claim = float(cu.pairwise_bound(cx, cy, c.eps))
    exact = (
        (cu.closed_form(ux, c.eps, 1.0, c.buckets).log() - cu.closed_form(uy, c.eps, 1.0, c.buckets).log())
        .abs()
        .max()
        .item()
    )
    assert exact <= claim + 1e-9
    n, v = 200_000, ux.shape[1]
    kx = np.bincount(draw(ux, c.eps, c.buckets, n, seed=41), minlength=v)
    ky = np.bincount(draw(uy, c.eps, c.buckets, n, seed=42), minlength=v)
    lo_x, hi_x = _clopper_pearson(kx, n, ALPHA)
    lo_y, hi_y = _clopper_pearson(ky, n, ALPHA)
    seen = (kx > 0) & (ky > 0)
    lcb = np.maximum(np.log(lo_x[seen] / hi_y[seen]), np.log(lo_y[seen] / hi_x[seen]))
    assert lcb.max() <= claim
    assert lcb.max() > 0  # the pair does differ: the audit sees a loss


def test_paper_eps_prime_is_not_a_worst_case_bound():
    """Exact probabilities: for this pair the log-ratio exceeds eps + eps' of *either* input, so the
    accounting reports eps' as data dependent and also carries the provable bounds."""
    eps, nb = 0.5, 4
    x = torch.tensor([[0.0, 0.0, 0.25, 0.25, 1.0]], dtype=torch.float64)
    y = torch.tensor([[0.0, 0.25, 0.5, 1.0, 0.0]], dtype=torch.float64)
    _, cx, _ = cu.bucketize(x, nb)
    _, cy, _ = cu.bucketize(y, nb)
    assert cx.tolist() == [[2, 2, 0, 1]] and cy.tolist() == [[2, 1, 1, 1]]
    paper = eps + max(cu.eps_prime(cx).item(), cu.eps_prime(cy).item())  # 0.5 + ln 2
    ratio = (cu.closed_form(x, eps, 1.0, nb).log() - cu.closed_form(y, eps, 1.0, nb).log()).abs().max().item()
    assert ratio == pytest.approx(1.23462, abs=1e-4) and ratio > paper + 0.04
    assert ratio <= cu.pairwise_bound(cx, cy, eps).item()


def test_worst_case_eps_bound():
    c = math.exp(0.5)
    assert cu.worst_case_eps(1.0, 2, 2) == pytest.approx(math.log(c))  # two singleton buckets
    assert cu.worst_case_eps(1.0, 1, 50) == 0.0
    # by the formula for |V| = 10, N_b = 3
    m = np.arange(1, 4)
    assert cu.worst_case_eps(1.0, 10, 3) == pytest.approx(
        math.log(c / (c + 1)) + np.log((10 - m + 1) * (1 + (m - 1) * c)).max()
    )
    # never beaten by random pairs
    g = torch.Generator().manual_seed(5)
    u = torch.rand(400, 6, generator=g) ** 3
    p = cu.closed_form(u, 2.0, 1.0, 3).log()
    worst = (p.unsqueeze(1) - p.unsqueeze(0)).amax().item()
    assert worst <= cu.worst_case_eps(2.0, 6, 3)


# ---- mechanism on tiny models --------------------------------------------------------------------


def test_registry_params_and_accounting(causal, cape_causal):
    mech = get_mechanism("cape", eps=2.0, model=causal, buckets=20, utility="additive", logit_bound=3.0)
    p = mech.params()
    assert p["context"] == "causal" and p["buckets"] == 20 and p["delta_u"] == 1.5
    assert p["logit_bound"] == 3.0 and p["logit_bound_source"] == "given"
    out = mech.sanitize_batch(TEXTS[:2], gens(1, 2))
    for o in out:
        a = o.accounting
        assert a.n_perturbed > 0
        assert a.extra["eps_prime_max"] >= a.extra["eps_prime_mean"] >= 0
        assert a.extra["eps_total_max"] == pytest.approx(2.0 + a.extra["eps_prime_max"])
        block = privacy_block(mech, a, diagnostics=True)  # the paper's eps+eps', rendered from the events
        [claimed] = block["claimed"]
        assert a.n_perturbed * 2.0 <= claimed["claimed_eps"] <= a.n_perturbed * a.extra["eps_total_max"] + 1e-9
        assert block["proven"]["eps_per_token"] == pytest.approx(p["eps_per_token_worst_case"], rel=1e-4)
        assert "data dependent" in a.extra["composition"]
    d = out[0].accounting.to_dict()
    assert "eps_prime_mean" in d and "extra" not in d
    assert mech.stamp()["mechanism"] == "cape"


def test_composed_eps_is_sum_of_eps_plus_eps_prime(cape_causal):
    toks = cape_causal.tokenizer.tokenize(TEXTS[0])
    actions, _ = cape_causal.plan(toks)
    pos = np.flatnonzero(actions == PERTURB)
    rand = torch.from_numpy(record_generator(3, 0).random((len(pos), 2)))
    _, diag = cape_causal.perturb([toks.ids], [pos], rand)
    [out] = cape_causal.sanitize_batch([TEXTS[0]], [record_generator(3, 0)])
    [claimed] = privacy_block(cape_causal, out.accounting, diagnostics=True)["claimed"]
    assert claimed["claimed_eps"] == pytest.approx(
        len(pos) * cape_causal.eps + diag["eps_prime"].sum().item(), rel=1e-4
    )
    assert out.accounting.extra["eps_prime_max"] == pytest.approx(diag["eps_prime"].max().item())


def test_validation_before_loading():
    # unknown params and bad eps: test_contract.py
    for bad in (
        dict(eps=1, buckets=0),
        dict(eps=1, buckets=2.5),
        dict(eps=1, utility="max"),
        dict(eps=1, lambda_l=-1),
        dict(eps=1, lambda_l=0, lambda_d=0),
        dict(eps=1, logit_bound=0),
        dict(eps=1, context="bidirectional"),
        dict(eps=1, space="glove-6b-50d"),
        dict(eps=1, policy={"numbers": "sometimes"}),
    ):
        with pytest.raises(ValueError):
            Cape(model="/nonexistent/never/loaded", **bad)


def test_stopwords_and_punct_kept(cape_causal):
    text = "The, and of the."
    [out] = cape_causal.sanitize_batch([text], gens(2, 1))
    assert out.text == text
    a = out.accounting
    assert a.n_perturbed == 0 and a.kept == {"stopword": 4, "punct": 2}
    # mixed text: kept pieces come back verbatim, in place
    text = "Alice and the doctor, at Paris."
    toks = cape_causal.tokenizer.tokenize(text)
    actions, reasons = cape_causal.plan(toks)
    kept = {c for c, act in zip(toks.core, actions) if act == KEEP and c}
    assert {"and", "the", ",", "at", "."} <= kept
    [out] = cape_causal.sanitize_batch([text], gens(2, 1))
    for word in (" and the", ", at", "."):
        assert word in out.text


def test_plan_refinements(cape_causal):
    # a stopword-looking piece inside a longer word is perturbed; non-ASCII symbols are perturbed
    from ppt.spaces.tokens import Tokens, kind_of

    lead = ["", "", " ", "", " ", " "]
    core = ["don", "'t", "go", "€", "a", "s"]
    toks = Tokens(lead=lead, core=core, rows=np.arange(6), kinds=[kind_of(c) for c in core], ids=np.arange(6))
    actions, reasons = cape_causal.plan(toks)
    assert actions.tolist() == [PERTURB, PERTURB, PERTURB, PERTURB, KEEP, KEEP]
    assert reasons[4] == "stopword"


def test_numbers_policy(causal):
    text = "Alice moved in 2019."
    pert = Cape(2.0, model=causal, logit_bound=1.0)
    toks = pert.tokenizer.tokenize(text)
    actions, reasons = pert.plan(toks)
    num = [i for i, k in enumerate(toks.kinds) if k == "number"]
    assert num and all(actions[i] == PERTURB for i in num)
    digits = Cape(2.0, model=causal, logit_bound=1.0, policy={"numbers": "random-digits"})
    [out] = digits.sanitize_batch([text], gens(4, 1))
    assert out.accounting.digits_replaced == len(num) and "number" not in out.accounting.kept
    assert out.accounting.n_perturbed == sum(1 for a in pert.plan(toks)[0] if a == PERTURB) - len(num)


def test_reproducible_across_chunks(causal, cape_causal):
    """Batch size and order: test_contract.py; here the utility chunks and other seeds."""
    whole = cape_causal.sanitize_batch(TEXTS, gens(7, len(TEXTS)))
    # one utility row per chunk: the same draws meet the same rows. (Not asserted bit for bit: a 1-row
    # product may round differently from a many-row one on some BLAS builds and flip a bucket edge; a
    # chunking bug that misaligned rows and draws would change most positions.)
    tiny_chunks = Cape(3.0, model=causal, chunk_elements=1)
    toks = [cape_causal.tokenizer.tokenize(t) for t in TEXTS]
    ids = [t.ids for t in toks]
    pos = [np.flatnonzero(cape_causal.plan(t)[0] == PERTURB) for t in toks]
    rand = torch.rand((sum(len(p) for p in pos), 2), generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    a, _ = cape_causal.perturb(ids, pos, rand)
    b, _ = tiny_chunks.perturb(ids, pos, rand)
    assert a.numel() > 20 and (a == b).float().mean() >= 0.95
    # other seeds, other outputs
    other = cape_causal.sanitize_batch(TEXTS, gens(8, len(TEXTS)))
    assert [o.text for o in other] != [o.text for o in whole]


def test_candidates_and_output_text(causal, masked):
    model, tok = causal
    ids, texts = candidate_set(tok, model.get_input_embeddings().weight.shape[0])
    assert tok.eos_token_id not in ids.tolist()
    assert all(t and not t[0].isspace() and "\ufffd" not in t for t in texts)
    assert all(ch.isprintable() or ch.isspace() for t in texts for ch in t)
    mids, mtexts = candidate_set(masked[1], masked[0].get_input_embeddings().weight.shape[0])
    special = set(masked[1].all_special_ids)
    assert not special & set(mids.tolist())
    assert not any(t.startswith("##") for t in mtexts)


def test_causal_features_match_full_forward(causal, cape_causal):
    model, tok = causal
    lm = cape_causal.lm
    ids = np.asarray(tok(TEXTS[0], add_special_tokens=False)["input_ids"])
    pos = np.array([0, 2, len(ids) - 1])
    got = lm.candidate_logits(lm.features([ids], [pos]))
    with torch.no_grad():
        full = model(torch.tensor([[lm.prefix_id] + ids.tolist()])).logits[0]
    want = full[torch.as_tensor(pos)][:, cape_causal.candidates]  # hidden at p (after the prefix) predicts token p
    assert torch.allclose(got, want, atol=1e-4)
    # a text longer than the context window (31 + prefix): windows keep >= half a window of left context
    long_ids = np.asarray(tok(" ".join(CORPUS[:3]), add_special_tokens=False)["input_ids"])
    assert len(long_ids) > lm.window
    p = np.array([len(long_ids) - 1])
    got = lm.candidate_logits(lm.features([long_ids], [p]))
    start = len(long_ids) - lm.window
    with torch.no_grad():
        ref = model(torch.tensor([[lm.prefix_id] + long_ids[start:].tolist()])).logits[0, p[0] - start]
    assert torch.allclose(got[0], ref[cape_causal.candidates], atol=1e-4)
    [out] = cape_causal.sanitize_batch([" ".join(CORPUS[:3])], gens(1, 1))
    assert out.accounting.n_perturbed > 0


def test_calibrated_bound(causal, cape_causal):
    model, tok = causal
    lm = cape_causal.lm
    vals = []
    with torch.no_grad():
        for prompt in CALIBRATION_PROMPTS:
            ids = tok(prompt, add_special_tokens=False)["input_ids"]
            vals.append(
                model(torch.tensor([[lm.prefix_id] + ids])).logits[0, :-1][:, cape_causal.candidates].abs().flatten()
            )
    want = float(np.quantile(torch.cat(vals).double().numpy(), CALIBRATION_QUANTILE))
    assert cape_causal.logit_bound == pytest.approx(want, rel=1e-4)
    assert cape_causal.params()["logit_bound"] == cape_causal.logit_bound


@pytest.mark.parametrize(
    "form,lam_l,lam_d", [("product", 0.5, 1.0), ("product", 2.0, 0.5), ("product", 0.0, 1.0), ("additive", 0.5, 1.0)]
)
def test_utilities_match_definition(causal, form, lam_l, lam_d):
    """The fused in-place utility equals the reference formulas of cape_utility and the hand formula."""
    c = Cape(3.0, model=causal, utility=form, lambda_l=lam_l, lambda_d=lam_d, logit_bound=2.5)
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, c.candidates.numel(), generator=g) * 5
    orig = torch.tensor(
        [c.candidates[5].item(), c.candidates[0].item(), c.candidates[5].item(), 0]
    )  # 0: a special token
    u = c.utilities(logits.clone(), orig)
    e = c.embeddings.double()
    cand_norm = e[c.candidates].norm(dim=1)
    for i in range(4):
        # the reference in float64, from direct differences
        d = (e[c.candidates] - e[orig[i]]).norm(dim=1)
        dt = torch.exp(-d / d.max())
        lt = (logits[i].double().clamp(-2.5, 2.5) + 2.5) / 5.0
        want = lt.pow(lam_l) * dt.pow(lam_d) if form == "product" else lam_l * lt + lam_d * dt
        # the mechanism's float32 distances come from ||e||^2 + ||c||^2 - 2 e.c: a dot product over n
        # dimensions rounds d^2 by at most (n + 2) eps32 (||e|| + ||c||)^2 =: a, so d moves by at most
        # min(sqrt(a), a / d) (cancellation near d = 0 is the worst case, and its size depends on the BLAS
        # kernel), D^lambda_D = exp(-lambda_D d / d_max) by lambda_D / d_max per unit of d or of d_max;
        # L~ and the rest round at float32 (1e-6)
        n_dim = e.shape[1]
        a = (n_dim + 2) * torch.finfo(torch.float32).eps * (e[orig[i]].norm() + cand_norm) ** 2
        err_d = torch.minimum(a.sqrt(), a / d.clamp_min(1e-300))
        tol = lam_d * (err_d + err_d[d.argmax()]) / d.max() + 1e-6
        assert bool(((u[i].double() - want).abs() <= tol).all())
        ref = cu.combine(
            cu.logit_term(logits[i : i + 1], 2.5), cu.distance_term(d.float().unsqueeze(0)), lam_l, lam_d, form
        )
        assert bool(((u[i] - ref[0]).double().abs() <= tol).all())
    assert float(u.min()) >= 0 and float(u.max()) <= c.delta_u + 1e-6


@pytest.mark.statistical
def test_mechanism_output_matches_closed_form(cape_causal, monkeypatch):
    """The mechanism's perturb path (utilities, chunked sampling) follows the bucketized closed form of
    one position's utilities. The context model runs once; its features are repeated n times."""
    c = cape_causal
    toks = c.tokenizer.tokenize(TEXTS[0])
    actions, _ = c.plan(toks)
    pos = np.flatnonzero(actions == PERTURB)[:1]
    feats = c.lm.features([toks.ids], [pos])
    u = c.utilities(c.lm.candidate_logits(feats), torch.as_tensor(toks.ids[pos]))
    probs = cu.closed_form(u, c.eps, c.delta_u, c.buckets)[0].numpy()
    n = 20_000
    monkeypatch.setattr(c.lm, "features", lambda ids, positions, mix_records=False: feats.expand(len(ids), -1))
    g = torch.Generator().manual_seed(31)
    cols, _ = c.perturb([toks.ids] * n, [pos] * n, torch.rand((n, 2), generator=g, dtype=torch.float64))
    assert chisquare_p(np.bincount(cols.numpy(), minlength=len(probs)), probs) > ALPHA


def test_masked_path(masked):
    model, tok = masked
    mech = Cape(4.0, model=masked)
    assert mech.context == "masked" and mech.lm.head_mode == "restricted"
    lm = mech.lm
    ids = np.asarray(tok(TEXTS[1], add_special_tokens=False)["input_ids"])
    pos = np.array([0, 3, len(ids) - 1])
    got = lm.candidate_logits(lm.features([ids], [pos]))
    with torch.no_grad():
        for row, p in enumerate(pos):
            x = ids.copy()
            x[p] = tok.mask_token_id
            full = model(torch.tensor([[tok.cls_token_id] + x.tolist() + [tok.sep_token_id]])).logits[0, p + 1]
            assert torch.allclose(got[row], full[mech.candidates], atol=1e-4)
    # every masked copy of a batch in one pass; long texts use a window around the masked position
    long_text = " ".join(CORPUS[:2])
    out = mech.sanitize_batch(TEXTS + [long_text], gens(5, len(TEXTS) + 1))
    assert len(out) == len(TEXTS) + 1 and out[2].text == ""
    assert out[-1].accounting.n_perturbed > 0
    assert out[0].accounting.kept.get("stopword", 0) >= 1
    again = [mech.sanitize_batch([t], gens(5, 1, start=i))[0].text for i, t in enumerate(TEXTS)]
    assert again == [o.text for o in out[: len(TEXTS)]]


def test_masked_fallback_full_logits(masked):
    """A masked LM without a separable BERT head goes through the full-logits path; same numbers."""
    model, tok = masked
    mech = Cape(4.0, model=masked, logit_bound=1.0)
    fallback = Cape(4.0, model=masked, logit_bound=1.0)
    fallback.lm.base = None
    ids = np.asarray(tok(TEXTS[0], add_special_tokens=False)["input_ids"])
    pos = np.arange(len(ids))
    a = mech.lm.candidate_logits(mech.lm.features([ids], [pos]))
    b = fallback.lm.candidate_logits(fallback.lm.features([ids], [pos]))
    assert torch.allclose(a, b, atol=1e-4)


# ---- the real model ------------------------------------------------------------------------------


@pytest.mark.integration
def test_smollm2_integration():
    models = pytest.importorskip("ppt.models")
    if not hasattr(models, "load_causal_lm"):
        pytest.skip("ppt.models.load_causal_lm not available yet")
    from ppt.models.registry import is_installed

    if not is_installed("smollm2"):
        pytest.skip("smollm2 not installed (ppt models install smollm2)")
    mech = Cape(6.0, model="smollm2", device="cpu")
    p = mech.params()
    assert p["context"] == "causal" and 48_000 < p["n_candidates"] < 49_152
    assert 10 < p["logit_bound"] < 40
    texts = ["Alice Johnson moved to Paris in 2019 to study medicine.", "The meeting is on Tuesday at the office."]
    out = mech.sanitize_batch(texts, gens(9, 2))
    again = [mech.sanitize_batch([t], gens(9, 1, start=i))[0] for i, t in enumerate(texts)]
    assert [o.text for o in out] == [o.text for o in again]
    assert " to " in out[0].text and out[0].text != texts[0]
    assert out[1].accounting.kept["stopword"] >= 3
    claimed = [privacy_block(mech, o.accounting, diagnostics=True)["claimed"][0]["claimed_eps"] for o in out]
    assert all(c >= o.accounting.n_perturbed * 6.0 for c, o in zip(claimed, out))


def test_bfloat16_context_model(causal):
    """dtype='bfloat16' runs the forward and the head/distance products in bf16: utilities stay close."""
    import copy

    model, tok = causal
    ref = Cape(3.0, model=causal, logit_bound=2.5)
    fast = Cape(3.0, model=(copy.deepcopy(model), tok), dtype="bfloat16", logit_bound=2.5)
    assert fast.params()["dtype"] == "bfloat16" and ref.params()["dtype"] == "float32"
    ids = np.asarray(tok(TEXTS[0], add_special_tokens=False)["input_ids"])
    pos = np.arange(len(ids))
    orig = torch.as_tensor(ids)
    u_ref = ref.utilities(ref.lm.candidate_logits(ref.lm.features([ids], [pos])), orig)
    u_fast = fast.utilities(fast.lm.candidate_logits(fast.lm.features([ids], [pos])), orig)
    assert (u_ref - u_fast).abs().max() < 0.05
    out = fast.sanitize_batch(TEXTS, gens(3, len(TEXTS)))
    assert [fast.sanitize_batch([t], gens(3, 1, start=i))[0].text for i, t in enumerate(TEXTS)] == [o.text for o in out]


def test_utilities_stay_in_the_unit_interval_at_the_clip(cape_causal):
    """Logits clipped at -B must map to u >= 0: the in-place affine map could round to about -1e-8 and
    the square root (lambda_L = 0.5) then gave NaN, seen as a flaky masked-path failure."""
    c = cape_causal
    n = int(c.candidates.numel())
    logits = torch.full((2, n), -1e9)
    logits[1] = torch.linspace(-3 * c.logit_bound, 3 * c.logit_bound, n)
    u = c.utilities(logits, torch.as_tensor([int(c.candidates[0]), int(c.candidates[1])]))
    assert torch.isfinite(u).all() and (u >= 0).all()


def test_non_finite_utilities_fail_closed():
    u = torch.rand(2, 10, dtype=torch.float64)
    u[1, 3] = float("nan")
    with pytest.raises(FloatingPointError):
        cu.sample_bucketized(u, 1.0, 1.0, 4, torch.rand(2), torch.rand(2))


@pytest.mark.parametrize("which", ["causal", "masked"])
def test_features_bitwise_independent_of_batch(which, request):
    """A record's features are computed from the record alone: bit-for-bit the same alone or batched with
    longer and shorter records (padded batches across records change float rounding, which can flip a
    bucket edge and break seeded reproducibility)."""
    model, tok = request.getfixturevalue(which)
    mech = Cape(4.0, model=(model, tok))
    texts = [TEXTS[0], " ".join(CORPUS[:2]), TEXTS[3], TEXTS[1]]
    ids = [np.asarray(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
    pos = [np.arange(len(i)) for i in ids]
    together = mech.lm.features(ids, pos)
    rows = np.cumsum([0] + [len(p) for p in pos])
    mixed = mech.lm.features(ids, pos, mix_records=True)
    for k in range(len(texts)):
        alone = mech.lm.features([ids[k]], [pos[k]])
        assert torch.equal(alone, together[rows[k] : rows[k + 1]])
        assert torch.allclose(alone, mixed[rows[k] : rows[k + 1]], atol=1e-4)


def test_batching_modes(causal):
    """ "auto" keeps records apart on seeded runs and mixes them on OS-entropy runs."""
    with pytest.raises(ValueError, match="batching"):
        Cape(3.0, model=causal, batching="sometimes")
    mech = Cape(3.0, model=causal)
    assert mech.batching == "auto" and not mech.mix_records(reproducible=True)
    assert mech.mix_records(reproducible=False)
    assert Cape(3.0, model=causal, batching="mixed").mix_records(reproducible=True)
    record = Cape(3.0, model=causal, batching="record")
    assert not record.mix_records(reproducible=False)
    # mixed batching samples from the same distribution: same output on these texts up to rare edge flips
    mixed = Cape(3.0, model=causal, batching="mixed").sanitize_batch(TEXTS, gens(7, len(TEXTS)))
    apart = Cape(3.0, model=causal, batching="record").sanitize_batch(TEXTS, gens(7, len(TEXTS)))
    same = sum(a.text == b.text for a, b in zip(mixed, apart))
    assert same >= len(TEXTS) - 1


def test_sanitize_records_marks_seeded_runs(causal, monkeypatch):
    from ppt.io import Record
    from ppt.stages.sanitize import sanitize_records
    from ppt.stages.sanitize_spec import SanitizeSpec

    mech = Cape(3.0, model=causal)
    mixed: list[bool] = []
    features = mech.lm.features

    def spy(ids, positions, mix_records=False):
        mixed.append(mix_records)
        return features(ids, positions, mix_records=mix_records)

    monkeypatch.setattr(mech.lm, "features", spy)
    recs = [Record(line_no=0, id="a", text=TEXTS[0], data={"id": "a", "text": TEXTS[0]})]
    sanitize_records(mech, recs, SanitizeSpec("cape", seed=None))
    assert mixed == [True]  # unseeded: passed as reproducible=False, never stored on the mechanism
    [rec] = sanitize_records(mech, recs, SanitizeSpec("cape", seed=3, emit_alignment="al"))
    assert mixed == [True, False]
    # Cape aligns by the context model's token ids (no space to locate spans in: pairs only)
    pairs = rec["al"]
    assert len(pairs) == rec["ppt"]["sanitize"]["privacy"]["proven"]["tokens"] > 0
    assert all(len(p) == 2 for p in pairs)
    assert {n for _, n in pairs} <= set(mech.candidates.tolist())


def test_signature_names_the_model_weights(causal, cape_causal):
    """Two context models under the same name must not share a signature (issue 16: Cape's signature
    named the model without a hash)."""
    from ppt.mechanisms.signature import make_signature, parse_signature
    from ppt.models.fingerprint import weights_fingerprint

    model, tok = causal
    sig = parse_signature(make_signature(cape_causal))
    assert sig["params"]["model_hash"] == weights_fingerprint(model)[:8]
    assert cape_causal.params()["model_hash"] == weights_fingerprint(model)
    other = tiny_llama(len(tok), seed=5, max_position_embeddings=32, tie_word_embeddings=True)
    sig2 = parse_signature(make_signature(Cape(3.0, model=(other, tok))))
    assert (
        sig2["params"]["model"] == sig["params"]["model"]
        and sig2["params"]["model_hash"] != sig["params"]["model_hash"]
    )


def test_reproducible_runs_use_one_thread_and_b_is_rounded(causal, monkeypatch):
    """Seeded (unmixed) Cape runs its model passes on one intra-op thread on the CPU: the thread count
    changes float rounding (and so some records) and ``--workers N`` gives each worker cores/N threads.
    Unseeded (mixed) runs keep torch's setting. B is calibrated on one thread, rounded to 4 digits."""
    import ppt.mechanisms.cape.loading as loading

    calib = []
    real_bound = loading.cu.calibrate_bound
    monkeypatch.setattr(
        loading.cu, "calibrate_bound", lambda *a, **k: (calib.append(torch.get_num_threads()), real_bound(*a, **k))[1]
    )
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        mech = Cape(3.0, model=causal)
        assert calib == [1] and mech.logit_bound == float(f"{mech.logit_bound:.4g}")
        seen = []
        real = mech.lm.features
        monkeypatch.setattr(
            mech.lm, "features", lambda *a, **k: (seen.append(torch.get_num_threads()), real(*a, **k))[1]
        )
        mech.sanitize_batch([TEXTS[0]], gens(1, 1), reproducible=True)
        mech.sanitize_batch([TEXTS[0]], gens(1, 1), reproducible=False)
        assert seen == [1, 2] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
