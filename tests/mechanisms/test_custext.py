"""CusText / CusText+: greedy disjoint groups, closed-form within-group distribution, limits, privacy
audit, stopwords, reproducibility and caching, on small spaces built from arrays."""

from __future__ import annotations

import itertools
import string

import numpy as np
import pytest
import torch
from scipy import stats

from ppt.mechanisms import custext as ct
from ppt.mechanisms import get_mechanism
from ppt.mechanisms.custext import CusText, CusTextPlus
from ppt.mechanisms.policy import stopwords_en
from ppt.rng import record_generator

ALPHA = 1e-6
V, K = 47, 5


def words(n: int) -> list[str]:
    return ["zq" + "".join(t) for t in itertools.islice(itertools.product(string.ascii_lowercase, repeat=2), n)]


@pytest.fixture
def space(array_space):
    return array_space("custext-test", words(V), seed=3, dim=4)


def groups_of(mech) -> list[list[int]]:
    mech.precompute()
    off = mech.offsets.tolist()
    mem = mech.members.tolist()
    return [mem[off[i] : off[i + 1]] for i in range(len(off) - 1)]


def naive_groups(emb: np.ndarray, freq_rank: np.ndarray, k: int) -> list[list[int]]:
    """The greedy mapping written plainly (a loop over words; fine for a tiny vocabulary)."""
    e = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    free = set(range(len(e)))
    out = []
    for leader in sorted(range(len(e)), key=lambda i: (freq_rank[i], i)):
        if leader not in free:
            continue
        others = sorted(free - {leader}, key=lambda j: -float(e[leader] @ e[j]))
        group = [leader] + others[: k - 1]
        free -= set(group)
        out.append(group)
    return out


def closed_form(space, group: list[int], x: int, eps: float) -> np.ndarray:
    e = space.embeddings.double().numpy()
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    s = e[group] @ e[x]
    s = (s - s.min()) / (s.max() - s.min())
    z = np.exp(eps * s / 2)
    return z / z.sum()


def sample(mech, x: int, n: int, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    out, _ = mech.perturb_rows(torch.full((n,), x, dtype=torch.long), mech.draw(n, g))
    return out.numpy()


def counts_in(out: np.ndarray, group: list[int]) -> np.ndarray:
    pos = {r: i for i, r in enumerate(group)}
    assert set(out.tolist()) <= set(group), "an output outside the input's group"
    return np.bincount([pos[r] for r in out.tolist()], minlength=len(group))


# ---- the mapping ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n,k", [(47, 5), (40, 5), (23, 20), (9, 1), (5, 20)])
def test_groups_disjoint_cover_and_sized(array_space, n, k):
    sp = array_space(f"g{n}-{k}", words(n), seed=3, dim=4)
    sp.freq_rank = np.random.default_rng(n).permutation(n)
    mech = CusText(1.0, space=sp, k=k)
    groups = groups_of(mech)
    flat = [r for g in groups for r in g]
    assert sorted(flat) == list(range(n))  # disjoint and covering
    sizes = [len(g) for g in groups]
    assert all(s == k for s in sizes[:-1])
    assert sizes[-1] == (n % k or k)
    # same as the plain greedy: leaders in frequency order, each with its most similar free words
    assert groups == naive_groups(sp.embeddings.numpy().astype(np.float64), sp.freq_rank, k)
    for g in groups:
        assert mech.group_members(g[-1]) == g


def test_every_members_outputs_stay_in_its_group(space):
    mech = CusText(2.0, space=space, k=K)
    groups = groups_of(mech)
    group_of = {r: i for i, g in enumerate(groups) for r in g}
    rows = torch.arange(V).repeat_interleave(300)
    out, _ = mech.perturb_rows(rows, mech.draw(len(rows), np.random.default_rng(0)))
    assert all(group_of[a] == group_of[b] for a, b in zip(rows.tolist(), out.tolist()))
    assert (out == rows).float().mean() < 1.0


# ---- distribution ---------------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("eps,pick", [(1.0, 0), (2.0, 3), (6.0, 7)])
def test_distribution_matches_closed_form(space, eps, pick):
    mech = CusText(eps, space=space, k=K)
    group = groups_of(mech)[pick]
    x = group[-1] if pick % 2 else group[0]
    counts = counts_in(sample(mech, x, 100_000, seed=pick), group)
    assert stats.chisquare(counts, closed_form(space, group, x, eps) * counts.sum()).pvalue > ALPHA


@pytest.mark.statistical
def test_eps_to_zero_is_uniform_over_the_group(space):
    mech = CusText(1e-6, space=space, k=K)
    group = groups_of(mech)[2]
    counts = counts_in(sample(mech, group[1], 50_000, seed=1), group)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_large_eps_keeps_the_word(space):
    mech = CusText(1e4, space=space, k=K)
    for group in groups_of(mech)[:4]:
        for x in group:
            assert np.all(sample(mech, x, 500, seed=x) == x)  # the most similar member is x itself


def test_table_rows_match_closed_form(space):
    mech = CusText(3.0, space=space, k=K)
    for group in groups_of(mech):
        for x in group:
            row = mech.cdf[x].numpy()
            probs = np.diff(row[: len(group)], prepend=0.0)
            assert np.allclose(probs, closed_form(space, group, x, 3.0), atol=1e-12)
            assert np.all(row[len(group) :] == 1.0)


# ---- privacy audit --------------------------------------------------------------------------------
# Claimed bound: s~ is in [0, 1], so every numerator exp(eps s~/2) lies in [1, e^{eps/2}] and so does the
# ratio of normalisers over the same group; P[y|x] / P[y|x'] <= e^{eps/2} * e^{eps/2} = e^{eps}.


def clopper_pearson(k, n, a):
    lo = np.where(k > 0, stats.beta.ppf(a, np.maximum(k, 1), n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, np.maximum(n - k, 1)), 1.0)
    return lo, hi


@pytest.mark.statistical
@pytest.mark.parametrize("eps", [1.0, 3.0])
@pytest.mark.slow(reason="a statistical audit: many draws per eps and space")
def test_privacy_audit_within_group_never_exceeds_eps(space, eps):
    mech = CusText(eps, space=space, k=K)
    n = 200_000
    worst = -np.inf
    for gi, group in enumerate(groups_of(mech)[:3]):
        counts = {x: counts_in(sample(mech, x, n, seed=10 * gi + j), group) for j, x in enumerate(group)}
        pairs = [(a, b) for a in group for b in group if a != b]
        a_level = ALPHA / (2 * len(pairs) * len(group))
        for a, b in pairs:
            lo, _ = clopper_pearson(counts[a], n, a_level)
            _, hi = clopper_pearson(counts[b], n, a_level)
            lcb = np.log(lo / hi).max()
            assert lcb <= eps + 1e-9, (a, b, lcb)
            ok = (counts[a] > 0) & (counts[b] > 0)
            worst = max(worst, np.log(counts[a][ok] / counts[b][ok]).max())
    assert worst > 0.5 * eps  # the audit sees a real gap (the bound is nearly met by self vs farthest)


# ---- pipeline, stopwords, reproducibility, caching, validation ------------------------------------


def test_custext_plus_keeps_stopwords(array_space):
    vocab = words(30) + ["the", "and", "of", "is", "zzzfoo"]
    sp = array_space("sw", vocab, seed=3, dim=4)
    assert {"the", "and", "of", "is"} <= stopwords_en() and len(stopwords_en()) == 179
    text = "the zqaa and zqab of zqac is"
    plus = CusTextPlus(1e-6, space=sp, k=K)
    outs = plus.sanitize_batch([text] * 20, [record_generator(0, i) for i in range(20)])
    for o in outs:
        toks = o.text.split()
        assert [toks[i] for i in (0, 2, 4, 6)] == ["the", "and", "of", "is"]
        assert o.accounting.kept["stopword"] == 4 and o.accounting.n_perturbed == 3
    plain = CusText(1e-6, space=sp, k=K)
    outs = plain.sanitize_batch([text] * 20, [record_generator(0, i) for i in range(20)])
    assert any(o.text.split()[0] != "the" for o in outs)  # plain CusText perturbs stopwords
    assert all(o.accounting.n_perturbed == 7 and "stopword" not in o.accounting.kept for o in outs)


def test_oov_follows_policy_never_raw(space):
    mech = get_mechanism("custext", eps=1.0, space=space, k=K)
    [o] = mech.sanitize_batch(["zqaa Secretname zqab"], [record_generator(5, 0)])
    assert "Secretname" not in o.text and o.accounting.replaced_uniform == 1
    assert "group" in CusText.notion
    from ppt.mechanisms import Policy

    drop = CusText(1.0, space=space, k=K, policy=Policy(oov="drop"))
    [o] = drop.sanitize_batch(["zqaa Secretname zqab"], [record_generator(5, 0)])
    assert len(o.text.split()) == 2 and o.accounting.dropped == {"oov": 1}


def test_groups_and_tables_cached_separately(space):
    g0, t0 = ct.BUILD_COUNTS["custext-groups"], ct.BUILD_COUNTS["custext-table"]
    a = CusText(1.0, space=space, k=K)
    ga, ta = a.precompute()
    assert (ct.BUILD_COUNTS["custext-groups"], ct.BUILD_COUNTS["custext-table"]) == (g0 + 1, t0 + 1)
    CusText(2.0, space=space, k=K).precompute()  # new eps: new table, same groups
    assert (ct.BUILD_COUNTS["custext-groups"], ct.BUILD_COUNTS["custext-table"]) == (g0 + 1, t0 + 2)
    CusTextPlus(1.0, space=space, k=K).precompute()  # CusText+ shares both
    assert (ct.BUILD_COUNTS["custext-groups"], ct.BUILD_COUNTS["custext-table"]) == (g0 + 1, t0 + 2)
    ref = a.cdf.clone()

    path = ta.file("cdf.npy")
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x55
    path.write_bytes(bytes(data))
    b = CusText(1.0, space=space, k=K)
    b.precompute()
    assert (ct.BUILD_COUNTS["custext-groups"], ct.BUILD_COUNTS["custext-table"]) == (g0 + 1, t0 + 3)
    assert torch.equal(b.cdf, ref)

    gpath = ga.file("members.npy")
    gpath.write_bytes(gpath.read_bytes()[:-8])  # truncated
    CusText(1.0, space=space, k=K).precompute()
    assert ct.BUILD_COUNTS["custext-groups"] == g0 + 2


@pytest.mark.parametrize("kw", [{"k": 0}, {"k": -3}, {"k": 2.5}, {"k": True}])  # bad eps: test_contract.py
def test_bad_parameters_fail_before_loading_a_space(kw):
    with pytest.raises(ValueError):
        get_mechanism("custext", **{"eps": 1.0, **kw})


def test_defaults():
    assert CusText.defaults == {"eps": 1.0, "k": 20}
    assert CusTextPlus.default_policy.stopwords == "keep" and CusText.default_policy.stopwords == "perturb"
    assert CusText.default_policy.oov == "uniform"
