"""ppt.attacks.knn: nearest-neighbour inversion on hand-made cases with known answers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ppt.attacks.knn import KnnAttack, nearest_rows, rows_in_space
from ppt.attacks.summary import wilson
from ppt.spaces import space_from_arrays


@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_nearest_rows_matches_brute_force(metric):
    g = torch.Generator().manual_seed(1)
    emb, q = torch.randn(300, 16, generator=g), torch.randn(70, 16, generator=g)
    got = nearest_rows(q, emb, 5, metric, chunk=32)
    if metric == "l2":
        d = torch.cdist(q.double(), emb.double())
    else:
        d = 1 - torch.nn.functional.normalize(q.double(), dim=1) @ torch.nn.functional.normalize(emb.double(), dim=1).T
    want = d.argsort(1)[:, :5]
    assert torch.equal(got, want)


def test_self_is_first_neighbour_even_with_duplicates():
    emb = torch.tensor([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0]])
    rows = torch.tensor([0, 1])
    nb = nearest_rows(emb[rows], emb, 2, self_rows=rows)
    assert nb[:, 0].tolist() == [0, 1]


def test_knn_identity_perturbation_always_succeeds(space):
    knn = KnnAttack(space, (1, 10))
    rows = np.arange(space.size).repeat(3)
    hits = knn.hits(rows, rows)
    assert hits.all()


def test_knn_uniform_perturbation_succeeds_about_k_over_v(tmp_cache):
    rng = np.random.default_rng(2)
    v = 200
    sp = space_from_arrays("uniform-test", [f"w{i}" for i in range(v)], rng.normal(size=(v, 12)))
    knn = KnnAttack(sp, (1, 10))
    n = 20000
    orig = rng.integers(0, v, n)
    new = rng.integers(0, v, n)
    hits = knn.hits(orig, new)
    for j, k in enumerate((1, 10)):
        lo, hi = wilson(int(hits[:, j].sum()), n, z=5.0)
        assert lo <= k / v <= hi
    assert (hits[:, 1] >= hits[:, 0]).all()  # top-10 contains top-1


def test_knn_unknown_original_never_succeeds(space):
    knn = KnnAttack(space, (1,))
    assert not knn.hits(np.array([-1, -1]), np.array([0, 1])).any()


def test_rows_in_space_maps_words(space):
    assert rows_in_space(space, ["Cat", " mat", "zebra"]).tolist() == [1, 4, -1]
