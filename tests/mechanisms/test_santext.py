"""SanText / SanText+: closed-form distribution, limits, sensitive set, keep probability, privacy audit,
reproducibility and table caching, on small spaces built from arrays."""

from __future__ import annotations

import itertools
import math
import string

import numpy as np
import pytest
import torch
from scipy import stats

from ppt.mechanisms import get_mechanism
from ppt.mechanisms import santext as st
from ppt.mechanisms.privacy import privacy_block
from ppt.mechanisms.santext import SanText, SanTextPlus, sensitive_size
from ppt.rng import record_generator

ALPHA = 1e-6
V = 40


def words(n: int) -> list[str]:
    # alphabetic, not stopwords, distinct
    return ["zq" + "".join(t) for t in itertools.islice(itertools.product(string.ascii_lowercase, repeat=2), n)]


@pytest.fixture
def space(array_space):
    return array_space("santext-test", words(V), seed=7, dim=3)


def closed_form(space, x: int, eps: float, cols: np.ndarray) -> np.ndarray:
    """P[y | x] over cols, from the formula, in float64 (independent of the implementation), on the rows the
    mechanism measures: the space's exact integer grid (ppt.spaces.distances.ExactGrid, issue 36), which
    moves a coordinate by at most 2^-(e+1) (~1e-7 of the largest)."""
    from ppt.spaces.distances import ExactGrid

    g = ExactGrid(space.embeddings)
    e = g.rows.numpy() * 2.0**-g.e
    d = np.linalg.norm(e[cols] - e[x], axis=1)
    logits = -eps / 2 * d
    p = np.exp(logits - logits.max())
    return p / p.sum()


def sample(mech, x: int, n: int, seed: int):
    g = np.random.default_rng(seed)
    out, diag = mech.perturb_rows(torch.full((n,), x, dtype=torch.long), mech.draw(n, g))
    return out.numpy(), diag


def chisquare_ok(counts: np.ndarray, probs: np.ndarray) -> float:
    """p-value of a chi-square goodness of fit, pooling cells with expected count < 5."""
    n = counts.sum()
    exp = probs * n
    small = exp < 5
    if small.any():
        counts = np.append(counts[~small], counts[small].sum())
        exp = np.append(exp[~small], exp[small].sum())
    exp = exp * (counts.sum() / exp.sum())
    return stats.chisquare(counts, exp).pvalue


def counts_over(out: np.ndarray, cols: np.ndarray) -> np.ndarray:
    pos = np.searchsorted(cols, out)
    assert np.all(cols[np.clip(pos, 0, len(cols) - 1)] == out), "an output outside the sensitive set"
    return np.bincount(pos, minlength=len(cols))


# ---- distribution ---------------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize(
    "kind,eps,w,x",
    [("santext", 2.0, 1.0, 5), ("santext", 0.5, 1.0, 17), ("santext+", 2.0, 0.5, 39), ("santext+", 3.0, 0.5, 0)],
)
def test_distribution_matches_closed_form(space, kind, eps, w, x):
    kw = {"w": w, "p": 1.0} if kind == "santext+" else {}
    mech = get_mechanism(kind, eps=eps, space=space, **kw)
    cols = mech.sensitive
    out, _ = sample(mech, x, 100_000, seed=11 + x)
    counts = counts_over(out, cols)
    assert chisquare_ok(counts, closed_form(space, x, eps, cols)) > ALPHA


@pytest.mark.parametrize("eps", [2.0, 60.0])
def test_probabilities_are_exact(space, eps):
    """The sampler's rows equal the closed form to the portable exponential's precision (its exponent on a
    2^-20 grid: < 3.4e-7 per weight, so < 7e-7 per probability; issue 36), also far below the former int32
    table's 2^-31 step (eps 60 on this space: gaps up to ~100 nats, probabilities down to ~1e-44)."""
    mech = SanTextPlus(eps, space=space, w=0.6, p=1.0)
    probs = mech.probabilities(torch.arange(V)).numpy()
    for x in range(V):
        cf = closed_form(space, x, eps, mech.sensitive)
        assert np.allclose(probs[x], cf, rtol=7e-7, atol=0), x
    if eps > 10:
        cf = np.stack([closed_form(space, x, eps, mech.sensitive) for x in range(V)])
        assert (cf < 2.0**-31).sum() > 100 and (probs[cf < 2.0**-31] > 0).all()


def test_inverse_cdf_reaches_the_tail(space):
    """A uniform inside the interval of each of the least likely outputs returns that output, for outputs
    with probabilities down to ~1e-22: the inverse CDF runs over bands of BAND_NATS nats of gap from the
    least likely band to the most likely (column order inside a band), each output with its own width."""
    x = 3
    e = space.embeddings.double().numpy()
    eps = round(2 * 50.0 / float(np.linalg.norm(e - e[x], axis=1).max()), 3)  # the farthest word 50 nats below x
    mech = SanText(eps, space=space)
    p = closed_form(space, x, eps, mech.sensitive)
    gap = -np.log(p / p.max())
    order = np.lexsort((np.arange(len(p)), -np.floor(gap / st.BAND_NATS)))  # bands descending, then column
    assert 2.0**-100 < p.min() < 1e-20  # below 2^-53, above the uniform's 2^-106 grid
    start = np.concatenate([[0.0], np.cumsum(p[order])[:-1]])
    for k in range(12):
        for frac in (0.02, 0.5, 0.98):
            u = torch.tensor([start[k] + frac * p[order[k]]], dtype=torch.float64)
            got = mech.sample(torch.tensor([x]), u)
            assert int(got[0]) == int(mech.sensitive[order[k]]), (k, frac)


def test_uniform_has_106_bits_near_zero():
    g = np.random.default_rng(0)
    u = SanText.uniform(200_000, g)
    assert float(u.min()) >= 0 and float(u.max()) < 1
    assert stats.kstest(u, "uniform").pvalue > ALPHA
    lo = torch.rand(4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert torch.equal(0.0 + lo * 2.0**-53, lo * 2.0**-53) and float((lo * 2.0**-53).max()) < 2.0**-53


@pytest.mark.statistical
def test_eps_to_zero_is_uniform_over_sensitive_set(space):
    mech = SanTextPlus(1e-6, space=space, w=0.5, p=1.0)
    cols = mech.sensitive
    out, _ = sample(mech, 0, 60_000, seed=3)
    counts = counts_over(out, cols)
    assert chisquare_ok(counts, np.full(len(cols), 1 / len(cols))) > ALPHA


def test_large_eps_concentrates_on_best_candidate(space):
    mech = SanTextPlus(1e4, space=space, w=0.5, p=1.0)
    cols = mech.sensitive
    e = space.embeddings.double().numpy()
    sens_x = int(cols[0])
    out, _ = sample(mech, sens_x, 2000, seed=5)
    assert np.all(out == sens_x)  # a sensitive word is its own nearest sensitive word
    nonsens = [x for x in range(V) if x not in set(cols.tolist())]
    for x in nonsens[:5]:
        best = cols[np.argmin(np.linalg.norm(e[cols] - e[x], axis=1))]
        out, _ = sample(mech, x, 2000, seed=x)
        assert np.all(out == best)


# ---- sensitive set, SanText+ keep rule ------------------------------------------------------------


def test_sensitive_size_rule():
    # round half up (not Python's banker's rounding), at least one word
    assert sensitive_size(0.5, 41) == 21
    assert sensitive_size(0.9, 20_000) == 18_000
    assert sensitive_size(0.001, 40) == 1
    assert sensitive_size(1.0, 40) == 40
    assert sensitive_size(0.3, 10) == 3


@pytest.mark.parametrize("w", [0.01, 0.1, 0.25, 0.5, 0.9, 0.99, 1.0])
def test_sensitive_set_is_exactly_the_least_frequent(space, w):
    perm = np.random.default_rng(1).permutation(V)
    space.freq_rank = perm  # row i has frequency rank perm[i]
    mech = SanTextPlus(3.0, space=space, w=w)
    n = max(1, math.floor(w * V + 0.5))
    assert len(mech.sensitive) == n
    assert set(mech.sensitive.tolist()) == set(np.argsort(-perm)[:n].tolist())
    assert bool(mech._is_sensitive.sum() == n)


def test_santext_is_every_word(space):
    mech = SanText(3.0, space=space)
    assert mech.w == 1.0 and len(mech.sensitive) == V


@pytest.mark.statistical
def test_santext_plus_keeps_non_sensitive_with_probability_1_minus_p(space):
    mech = SanTextPlus(3.0, space=space, w=0.5, p=0.3)
    cols = set(mech.sensitive.tolist())
    x = 0  # the most frequent word: non-sensitive
    assert x not in cols
    n = 20_000
    out, diag = sample(mech, x, n, seed=9)
    kept = diag["unchanged"].numpy()
    assert stats.binomtest(int(kept.sum()), n, 0.7).pvalue > ALPHA
    assert np.all(out[kept] == x)
    assert set(out[~kept].tolist()) <= cols  # resampled words always come from V_s
    # a sensitive word is never kept by the rule
    xs = int(mech.sensitive[0])
    _, diag = sample(mech, xs, 2000, seed=10)
    assert not diag["unchanged"].any()


# ---- privacy audit --------------------------------------------------------------------------------
#
# Claimed bound. With Z(x) = sum_{y' in V_s} exp(-eps/2 d(x,y')),
#   P[y|x] / P[y|x'] = exp(-eps/2 (d(x,y) - d(x',y))) * Z(x') / Z(x).
# Triangle inequality: d(x',y) <= d(x,y) + d(x,x'), so the first factor is <= exp(eps/2 d(x,x')).
# Term by term, exp(-eps/2 d(x',y')) <= exp(-eps/2 d(x,y')) * exp(eps/2 d(x,x')), so
# Z(x') <= Z(x) exp(eps/2 d(x,x')). Together: P[y|x] / P[y|x'] <= exp(eps * d(x,x')) — metric LDP with
# eps * d (the paper's eps/2 in the exponent spends half on the numerator, half on the normaliser).


def clopper_pearson(k: np.ndarray, n: int, a: float) -> tuple[np.ndarray, np.ndarray]:
    lo = np.where(k > 0, stats.beta.ppf(a, np.maximum(k, 1), n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, np.maximum(n - k, 1)), 1.0)
    return lo, hi


def audit(mech, x: int, x2: int, n: int, seed: int) -> tuple[float, float]:
    """(max over outputs of the lower confidence bound of log P[y|x]/P[y|x'], max point estimate)."""
    cols = mech.sensitive
    c1 = counts_over(sample(mech, x, n, seed)[0], cols)
    c2 = counts_over(sample(mech, x2, n, seed + 1)[0], cols)
    seen = c1 > 0
    a = ALPHA / (2 * seen.sum())  # Bonferroni over the outputs and the two bounds
    lo1, _ = clopper_pearson(c1, n, a)
    _, hi2 = clopper_pearson(c2, n, a)
    lcb = np.log(lo1[seen] / hi2[seen]).max()
    both = seen & (c2 > 0)
    point = np.log(c1[both] / c2[both]).max()
    return float(lcb), float(point)


@pytest.mark.statistical
@pytest.mark.parametrize("eps", [1.0, 4.0])
@pytest.mark.slow(reason="a statistical audit: many draws per eps")
def test_privacy_audit_never_exceeds_metric_bound(space, eps):
    mech = SanText(eps, space=space)
    e = space.embeddings.double().numpy()
    dist = np.linalg.norm(e[:, None] - e[None], axis=2)
    np.fill_diagonal(dist, np.inf)
    pairs = [(3, int(np.argmin(dist[3]))), (20, int(np.argmin(dist[20]))), (7, 8)]
    for i, (x, x2) in enumerate(pairs):
        bound = eps * float(np.linalg.norm(e[x] - e[x2]))
        for a, b in ((x, x2), (x2, x)):
            lcb, point = audit(mech, a, b, 200_000, seed=100 + i)
            assert lcb <= bound + 1e-9, (a, b, lcb, bound)
            assert point > 0.25 * bound  # the audit sees real signal, not only noise
    # the audit has power: a claim half as strong as the derivation is refuted for a far pair
    x, x2 = 7, int(np.argmax(np.where(np.isinf(dist[7]), 0, dist[7])))
    lcb, _ = audit(SanText(1.0, space=space), x, x2, 200_000, seed=7)
    assert lcb > 0.25 * 1.0 * float(np.linalg.norm(e[x] - e[x2]))


# ---- pipeline, reproducibility, caching, validation -----------------------------------------------


def test_pipeline_policies_and_accounting(space):
    mech = SanTextPlus(2.0, space=space, w=0.5, p=0.0)
    [res] = mech.sanitize_batch(["zqaa unknownword zqbn 7 ."], [record_generator(1, 0)])
    acc = res.accounting
    assert mech.notion.startswith("metric LDP")
    assert acc.replaced_uniform == 1  # the OOV word, replaced by a uniform vocabulary word
    assert "unknownword" not in res.text
    assert acc.n_perturbed == 2
    # zqaa (row 0) is frequent -> non-sensitive -> kept with p = 0; zqbn (row 39) is sensitive
    assert acc.extra["kept_by_mechanism"] == 1
    assert res.text.split()[0] == "Zqaa"  # kept word; capitalised as the start of the output sentence
    assert acc.kept.get("punct") == 1 and acc.digits_replaced == 1 and "number" not in acc.kept
    # the kept word is unprotected, outside the composed eps
    [metric] = privacy_block(mech, acc)["proven"]["metric"].values()
    assert metric["eps"] == pytest.approx(1 * 2.0)
    assert mech.params()["n_sensitive"] == 20


def test_no_table_per_eps(space):
    """SanText(+) stores nothing per eps: sampling at several eps leaves the cache as it was, and the
    rows of one batch are computed ROW_CHUNK distinct words at a time."""
    root = space.cache.root
    before = sorted(p.relative_to(root) for p in root.rglob("*")) if root.exists() else []
    for eps in (1.0, 2.0, 4.5):
        mech = SanTextPlus(eps, space=space, w=0.5)
        assert mech.precompute() == [] and mech.prepare() is mech
        g = np.random.default_rng(0)
        rows = torch.arange(V).repeat(3)
        mech.perturb_rows(rows, mech.draw(rows.numel(), g))
    after = sorted(p.relative_to(root) for p in root.rglob("*")) if root.exists() else []
    assert after == before


def test_rows_chunked_like_whole(space, monkeypatch):
    """Chunking the distinct rows changes nothing: same outputs with ROW_CHUNK 128 and 7."""
    mech = SanText(2.0, space=space)
    rows = torch.arange(V).repeat(5)
    rand = mech.draw(rows.numel(), np.random.default_rng(4))
    ref = mech.perturb_rows(rows, rand)[0]
    monkeypatch.setattr(st, "ROW_CHUNK", 7)
    assert torch.equal(mech.perturb_rows(rows, rand)[0], ref)
    assert torch.allclose(mech.probabilities(torch.arange(V)), SanText(2.0, space=space).probabilities(torch.arange(V)))


@pytest.mark.parametrize(
    "kind,kw",
    [
        ("santext", {"w": 0.5}),
        ("santext+", {"w": 0.0}),
        ("santext+", {"w": 1.5}),
        ("santext+", {"p": -0.1}),
        ("santext+", {"p": 2}),
        ("santext+", {"w": "abc"}),
    ],  # bad eps: test_contract.py
)
def test_bad_parameters_fail_before_loading_a_space(kind, kw):
    kw = {"eps": 3.0, **kw}
    with pytest.raises(ValueError):
        get_mechanism(kind, space=None, **kw)  # space=None would load the default space: never reached


def test_defaults():
    assert SanTextPlus.defaults == {
        "eps": 0.8,
        "w": 0.9,
        "p": 0.3,
    }  # eps 0.8: worst case <= 20 on glove-6b-50d (issue 16)
    assert SanText.default_policy.oov == "uniform" and SanText.default_policy.stopwords == "perturb"
    assert SanTextPlus.keeps_words and not SanText.keeps_words


def test_rows_do_not_depend_on_the_other_rows_of_their_chunk(space):
    """A row's implemented distribution and samples are bitwise the same alone or next to a row that
    spans several bands (the one-band fast path and the banded path agree exactly)."""
    e = space.embeddings.double().numpy()
    span = np.linalg.norm(e[:, None] - e[None], axis=2).max(1)  # max distance per row (min is 0: itself)
    eps = float(2 * 8.0 / np.median(span))  # half the rows fit in one band of 8 nats, half do not
    mech = SanText(eps, space=space)
    wide = int(np.argmax(span))
    narrow = [x for x in range(V) if eps / 2 * span[x] < 8.0]
    assert narrow and eps / 2 * span[wide] >= 8.0
    u = torch.from_numpy(SanText.uniform(500, np.random.default_rng(2)))
    for x in narrow:
        alone = mech.probabilities(torch.tensor([x]))
        mixed = mech.probabilities(torch.tensor([x, wide]))[:1]
        assert torch.equal(alone, mixed), x
        rows = torch.full((500,), x)
        assert torch.equal(
            mech.sample(rows, u), mech.sample(torch.cat([rows, torch.tensor([wide])]), torch.cat([u, u[:1]]))[:500]
        )


def test_band_index_is_floor_of_gap_over_band_width():
    """bands()' band index (scaled truncation) is bucketize against the band edges, at and around them."""
    edges = torch.arange(1, 96, dtype=torch.float64) * st.BAND_NATS
    near = torch.cat([edges, torch.nextafter(edges, torch.zeros_like(edges)), torch.nextafter(edges, edges + 1)])
    gap = torch.cat(
        [
            near,
            torch.tensor([0.0, 5e-324, 1e-300]),
            torch.rand(5000, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 800,
        ]
    )
    gap = gap.clamp(max=st.MAX_GAP).reshape(1, -1)
    _, band, totals, _ = st.bands(gap.clone())
    expect = torch.bucketize(gap, edges[: totals.shape[1] - 1], right=True)
    assert band.dtype == torch.uint8 and torch.equal(band.to(torch.int64), expect)


@pytest.mark.parametrize("cls", [SanText, SanTextPlus])
def test_row_cache_changes_no_output(space, cls):
    """Rows cached across batches (admitted on their second computation, least recently used evicted)
    sample exactly as rows computed afresh, for one-band and banded rows; the cache is really used."""
    e = space.embeddings.double().numpy()
    span = np.linalg.norm(e[:, None] - e[None], axis=2).max(1)
    eps = float(2 * 8.0 / np.median(span))  # half the rows in one band, half across several
    cold = cls(eps, space=space)
    cold.row_cache_bytes = 0
    cold.backend = "torch"  # the row cache belongs to the torch sampler
    hot = cls(eps, space=space)
    hot.backend = "torch"
    hot.row_cache_bytes = 12 * st.RowCache.slots_for(1, 1) + 12 * (
        9 * len(hot.sensitive) + 16 * st.RowCache.max_bands + 32
    )
    g = torch.Generator().manual_seed(5)
    hits = 0
    narrow = torch.tensor([x for x in range(V) if eps / 2 * span[x] < 8.0])
    for i in range(12):
        rows = torch.randint(0, V, (60,), generator=g)
        if i % 3 == 0:  # only rows whose chunk fits one band: cached as cumulative weights
            rows = narrow[rows % narrow.numel()]
        rand = hot.draw(rows.numel(), np.random.default_rng(i))
        cached = hot._row_cache
        if cached is not None:
            hits += int((cached.slot_of[rows] >= 0).sum())
        assert torch.equal(hot.perturb_rows(rows, rand)[0], cold.perturb_rows(rows, rand)[0])
    assert cold._row_cache is None and hot._row_cache.row.shape[0] == 12
    assert hits > 100 and bool((hot._row_cache.n_bands == 0).any()) and bool((hot._row_cache.n_bands > 1).any())
