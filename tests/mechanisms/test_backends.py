"""The numpy (CPU) and torch (device) samplers are one mechanism: the same draws give the same outputs.

The statistical tests run each backend against the closed-form distributions (tests/mechanisms/conftest.py);
here the two backends meet position by position, over every word of a tiny space, several eps and both
one-band and banded SanText rows, so a numpy port that drifted (a band offset, a clamp, a searchsorted
side) fails even where its distribution would still pass a goodness-of-fit test."""

from __future__ import annotations

import itertools
import string

import numpy as np
import pytest
import torch

from ppt.mechanisms.custext import CusText
from ppt.mechanisms.rantext import Rantext
from ppt.mechanisms.santext import SanText, SanTextPlus

WORDS = ["zq" + "".join(t) for t in itertools.islice(itertools.product(string.ascii_lowercase, repeat=2), 120)]


def both(mech, rows: torch.Tensor, seed: int):
    rand = mech.draw(rows.numel(), np.random.default_rng(seed))
    mech.backend = "numpy"
    a, da = mech.perturb_rows(rows, rand)
    mech.backend = "torch"
    b, db = mech.perturb_rows(rows, rand)
    return a, b, da, db


@pytest.mark.parametrize("eps", [0.5, 3.0, 12.0, 60.0])  # one band ... many bands
@pytest.mark.parametrize("cls", [SanText, SanTextPlus])
def test_santext_backends_agree(array_space, cls, eps):
    space = array_space("backends-santext", WORDS, seed=5, dim=4)
    mech = cls(eps, space=space)
    rows = torch.arange(space.size).repeat(40)
    a, b, da, db = both(mech, rows, seed=int(eps * 10))
    assert torch.equal(a, b)
    assert da.keys() == db.keys() and all(torch.equal(da[k], db[k]) for k in da)
    assert eps > 20 or (a != rows).any()  # the outputs are perturbed at all (at eps 60 nearly always kept)


@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
def test_custext_backends_agree(array_space, eps):
    space = array_space("backends-custext", WORDS, seed=3, dim=4)
    mech = CusText(eps, space=space, k=7)
    rows = torch.arange(space.size).repeat(40)
    a, b, _, _ = both(mech, rows, seed=1)
    assert torch.equal(a, b) and (a != rows).any()


@pytest.mark.parametrize("eps", [1.0, 6.0, 20.0])
def test_rantext_backends_agree(array_space, eps):
    space = array_space("backends-rantext", WORDS, seed=7, dim=8)
    mech = Rantext(eps, space=space)
    rows = torch.arange(space.size).repeat(40)
    a, b, da, db = both(mech, rows, seed=2)
    assert torch.equal(a, b) and torch.equal(da["cr_size"], db["cr_size"]) and (a != rows).any()


def test_cpu_default_is_numpy_and_the_switch_is_checked(array_space):
    space = array_space("backends-default", WORDS, seed=1, dim=4)
    mech = SanText(1.0, space=space)
    assert mech.backend == "numpy"
    mech.backend = "torch"
    assert mech.backend == "torch"
    with pytest.raises(ValueError):
        mech.backend = "cuda"
