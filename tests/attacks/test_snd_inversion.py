"""Nearest-token inversion: exact on clean rows, degraded by d_chi noise, intervals that cover."""

from __future__ import annotations

import torch

from ppt.attacks.snd_inversion import hits, nearest_rows, rate_ci
from ppt.rng import record_generator
from ppt.samplers.dchi import privatize


def test_clean_rows_are_inverted_exactly_and_noise_hurts():
    g = torch.Generator().manual_seed(0)
    table = torch.randn(500, 16, generator=g)
    ids = torch.randint(0, 500, (300,), generator=g)
    ranked = nearest_rows(table[ids], table, k=10, block=64)
    assert ranked.shape == (300, 10) and (ranked[:, 0] == ids).all()
    # brute force agrees (block boundaries change nothing)
    ref = torch.cdist(table[ids], table).topk(10, largest=False).indices
    assert torch.equal(ranked, ref)
    bound = float(table.norm(dim=1).max())
    rates = []
    for eta in (100.0, 1.0):
        noisy, _ = privatize(table[ids][None], eta, [record_generator(1, 0)], bound)
        h = hits(ids, nearest_rows(noisy[0], table, k=10))
        rates.append((float(h[1].float().mean()), float(h[10].float().mean())))
    assert rates[0][0] > 0.9 and rates[1][0] < 0.5 and rates[1][1] >= rates[1][0]


def test_intervals():
    w = rate_ci(30, 100)
    assert w["ci"][0] < 0.3 < w["ci"][1] and w["ci_method"] == "wilson"
    cp = rate_ci(30, 100, method="clopper-pearson")
    assert cp["ci"][0] < w["ci"][0] and cp["ci"][1] > w["ci"][1]  # exact intervals are the wider ones here
    assert rate_ci(0, 0)["rate"] is None
    # coverage: a 95% Wilson interval covers p in about 95% of seeded binomial draws
    g = torch.Generator().manual_seed(3)
    draws = torch.binomial(torch.full((400,), 200.0), torch.full((400,), 0.1), generator=g)
    cover = sum(rate_ci(int(x), 200)["ci"][0] <= 0.1 <= rate_ci(int(x), 200)["ci"][1] for x in draws)
    assert 0.9 < cover / 400 < 0.99
