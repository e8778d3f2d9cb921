"""Randomness policy: per-record streams from (seed, id); OS entropy otherwise."""

import subprocess
import sys

import numpy as np
import torch

from ppt.mechanisms import TokenMechanism
from ppt.rng import derive_seed, record_generator, record_numpy_rng, seeded
from ppt.spaces import space_from_arrays
from ppt.cache import Cache


def test_derived_seeds_depend_on_seed_id_and_stream():
    assert derive_seed(1, "a") == derive_seed(1, "a")
    assert len({derive_seed(1, "a"), derive_seed(2, "a"), derive_seed(1, "b"), derive_seed(1, "a", "x"), derive_seed(1, 0), derive_seed(1, "0")}) == 6


def test_seeded_generators_reproduce_and_entropy_ones_differ():
    a = torch.rand(8, generator=record_generator(5, "rec"))
    b = torch.rand(8, generator=record_generator(5, "rec"))
    c = torch.rand(8, generator=record_generator(None, "rec"))
    d = torch.rand(8, generator=record_generator(None, "rec"))
    assert torch.equal(a, b)
    assert not torch.equal(c, d)
    assert record_numpy_rng(5, 1).integers(1 << 30) == record_numpy_rng(5, 1).integers(1 << 30)
    assert seeded(None) is False and seeded(3) is True


class _Noisy(TokenMechanism):
    """A test mechanism: replaces each word by a uniformly random vocabulary word."""

    name = "noisy"
    notion = "test"

    def params(self):
        return {}

    def draw(self, n, g):
        return {"u": torch.rand(n, generator=g, dtype=torch.float64)}

    def perturb_rows(self, rows, rand):
        return (rand["u"] * self.space.size).long(), {}


def test_outputs_do_not_depend_on_batch_size_or_order(tmp_path):
    vocab = [f"w{i}" for i in range(50)]
    sp = space_from_arrays("t", vocab, np.eye(50, 4), cache=Cache(tmp_path))
    mech = _Noisy(1.0, space=sp)
    texts = {i: " ".join(vocab[(i * 7 + j) % 50] for j in range(5 + i % 3)) for i in range(12)}
    one_by_one = {i: mech.sanitize_batch([t], [record_generator(42, i)])[0].text for i, t in texts.items()}
    order = list(reversed(texts))
    batched = mech.sanitize_batch([texts[i] for i in order], [record_generator(42, i) for i in order])
    assert {i: r.text for i, r in zip(order, batched)} == one_by_one
    fresh = mech.sanitize_batch(list(texts.values()), [record_generator(None, i) for i in texts])
    assert [r.text for r in fresh] != [one_by_one[i] for i in texts]


def test_seeded_cli_run_warns_on_stderr():
    code = "from ppt.rng import warn_if_seeded; warn_if_seeded(3); warn_if_seeded(None)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout == "" and r.stderr.count("not production") == 1
