"""ppt.metrics.mapping: the mapping tally and the probe of a mechanism's word mapping."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ppt.metrics.mapping import MappingTally, probe


def test_mapping_tally():
    t = MappingTally()
    t.add(np.array([1, 1, 2, 3]), np.array([1, 5, 2, 4]))
    t.add(np.array([1]), np.array([6]))
    s = t.summary()
    assert s["pairs"] == 5 and s["retention"] == pytest.approx(2 / 5)
    assert s["n_w_mean"] == pytest.approx((3 + 1 + 1) / 3)


class _Mech:
    """A per-token kernel: with probability p keep the row, else a uniform row."""

    name, device = "coin", torch.device("cpu")

    def __init__(self, v, p):
        self.v, self.p = v, p

    def draw(self, n, g):
        return {"u": g.random(n), "r": g.integers(0, self.v, size=n)}

    def perturb_rows(self, rows, rand):
        return torch.where(rand["u"] < self.p, rows, rand["r"]), {}


def test_probe_identity_and_uniform():
    rows = np.arange(10)
    ident = probe(_Mech(50, 1.0), rows, draws=100)
    assert ident["retention"] == 1.0 and ident["n_w_mean"] == 1.0
    unif = probe(_Mech(50, 0.0), rows, draws=2000, generator=np.random.default_rng(1))
    assert unif["retention"] == pytest.approx(1 / 50, abs=0.01)
    assert unif["n_w_mean"] == pytest.approx(50, abs=1)  # 2000 uniform draws cover 50 rows
