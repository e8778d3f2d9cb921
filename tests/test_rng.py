"""Randomness policy: per-record streams from (seed, id); OS entropy otherwise."""

import subprocess
import sys

import numpy as np
import pytest
import torch

import ppt.rng
from ppt.cache import Cache
from ppt.mechanisms import TokenMechanism
from ppt.rng import (
    child_seed,
    derive_seed,
    entropy_seed,
    generator_from_seed,
    record_generator,
    record_numpy_rng,
    record_torch_generator,
    seeded,
)
from ppt.samplers.laplace import laplace_norms_seeded
from ppt.spaces import space_from_arrays


def test_derived_seeds_depend_on_seed_id_and_stream():
    assert derive_seed(1, "a") == derive_seed(1, "a")
    assert (
        len(
            {
                derive_seed(1, "a"),
                derive_seed(2, "a"),
                derive_seed(1, "b"),
                derive_seed(1, "a", "x"),
                derive_seed(1, 0),
                derive_seed(1, "0"),
            }
        )
        == 6
    )


def test_seeded_generators_reproduce_and_entropy_ones_differ():
    a = record_generator(5, "rec").random(8)
    b = record_generator(5, "rec").random(8)
    c = record_generator(None, "rec").random(8)
    d = record_generator(None, "rec").random(8)
    assert np.array_equal(a, b)
    assert not np.array_equal(c, d)
    assert record_numpy_rng(5, 1).integers(1 << 30) == record_numpy_rng(5, 1).integers(1 << 30)
    assert seeded(None) is False and seeded(3) is True


def test_seeds_carry_128_bits():
    """Derived and entropy seeds use 128 bits (a 63-bit mask would put every seed below 2^63)."""
    derived = [derive_seed(7, i) for i in range(64)]
    assert max(derived) < 1 << 128 and max(derived) >= 1 << 120
    assert max(entropy_seed() for _ in range(64)) >= 1 << 120
    assert all(child_seed(record_generator(1, i)) >= 0 for i in range(4))
    assert max(child_seed(record_generator(1, i)) for i in range(64)) >= 1 << 120


@pytest.mark.parametrize("bit", [32, 40, 63, 64, 100, 127])
def test_seeds_differing_only_in_high_bits_give_different_streams(bit):
    """torch's CPU mt19937 kept only the low 32 bits of a seed (s and s + 2^32 gave one stream): every
    bit of a record's 128-bit seed must reach its stream, and the Laplace sub-streams' too."""
    s = 0x1234_5678_9ABC_DEF0_1122_3344_5566_7788 & ((1 << bit) - 1)
    a, b = generator_from_seed(s).random(16), generator_from_seed(s | (1 << bit)).random(16)
    assert not np.array_equal(a, b)
    b2 = np.ones(8)
    assert not np.array_equal(laplace_norms_seeded(16, b2, s), laplace_norms_seeded(16, b2, s | (1 << bit)))


def test_record_streams_use_every_bit_of_the_derived_seed(monkeypatch, tmp_path):
    """Two records whose derived seeds differ only above bit 63 (or above bit 31) get different noise:
    fails if record_generator (or anything after it) truncates the seed."""
    base = derive_seed(3, "x")
    fake = {
        "lo": base & ((1 << 63) - 1),
        "hi63": (base & ((1 << 63) - 1)) | (1 << 100),
        "hi31": (base & ((1 << 32) - 1)) | (1 << 40),
    }
    monkeypatch.setattr(ppt.rng, "derive_seed", lambda seed, rid, stream="": fake[rid])
    draws = {k: record_generator(3, k).random(32) for k in fake}
    assert not np.array_equal(draws["lo"], draws["hi63"])
    assert not np.array_equal(draws["lo"], draws["hi31"])
    # and through a mechanism: the same text, seeds differing only above bit 63
    vocab = [f"w{i}" for i in range(1000)]
    sp = space_from_arrays("t", vocab, np.eye(1000, 4), cache=Cache(tmp_path))
    mech = _Noisy(1.0, space=sp)
    text = " ".join(vocab[:40])
    outs = {k: mech.sanitize_batch([text], [record_generator(3, k)])[0].text for k in fake}
    assert outs["lo"] != outs["hi63"] and outs["lo"] != outs["hi31"]


def test_torch_generators_for_lm_sampling_stay_seeded():
    """LM sampling keeps a torch generator (documented 32-bit limit): reproducible from (seed, id)."""
    a = torch.rand(4, generator=record_torch_generator(5, "r"))
    assert torch.equal(a, torch.rand(4, generator=record_torch_generator(5, "r")))
    assert not torch.equal(a, torch.rand(4, generator=record_torch_generator(5, "s")))


def test_importing_rng_does_not_import_torch():
    code = "import sys, ppt.rng, ppt.samplers.laplace; print('torch' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


class _Noisy(TokenMechanism):
    """A test mechanism: replaces each word by a uniformly random vocabulary word."""

    name = "noisy"
    notion = "test"

    def params(self):
        return {}

    def draw(self, n, g):
        return {"u": g.random(n)}

    def perturb_rows(self, rows, rand):
        return (torch.as_tensor(rand["u"]) * self.space.size).long(), {}


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


def test_dpopt_and_snd_noise_use_every_bit_of_a_record_seed(monkeypatch):
    """DP-OPT's vote sampling, Poisson participation, LimitedDomain release and selection, and
    Split-N-Denoise's d_chi noise draw from 128-bit numpy generators: two records whose derived seeds
    differ only above bit 63 (or 31) get different noise (torch's CPU generator would give the same)."""
    import torch

    from ppt.dpopt import limited_domain
    from ppt.dpopt.ensemble import sample_votes
    from ppt.dpopt.selection import select
    from ppt.dpopt.subsets import participation
    from ppt.snd.pipeline import privatize_rows

    base = derive_seed(3, "x")
    fake = {
        "lo": base & ((1 << 63) - 1),
        "hi63": (base & ((1 << 63) - 1)) | (1 << 100),
        "hi31": (base & ((1 << 32) - 1)) | (1 << 40),
    }
    monkeypatch.setattr(ppt.rng, "derive_seed", lambda seed, rid, stream="": fake[rid])

    def draws(k):
        g = record_generator(3, k)
        votes = sample_votes(torch.zeros(64, 1000), 1.0, g)
        mask = participation(256, 0.5, g)
        counts = torch.zeros(1000, dtype=torch.long)
        counts[:20] = 30  # twenty tied tokens: the release varies with the noise
        released = [limited_domain.release(counts, 0.5, 1e-4, 50, g) for _ in range(8)]
        chosen = [select(torch.zeros(1000), 1.0, g) for _ in range(4)]
        noisy, _ = privatize_rows([torch.zeros(3, 8)], 2.0, [g], 16.0)  # clip inactive; release grid 2^-19
        return votes.tolist(), mask.tolist(), released, chosen, noisy[0].tolist()

    out = {k: draws(k) for k in fake}
    for part in range(5):
        assert out["lo"][part] != out["hi63"][part] and out["lo"][part] != out["hi31"][part], part
    assert draws("lo") == out["lo"]  # seeded: reproducible


def test_privacy_noise_sites_do_not_use_32_bit_torch_generators():
    """Only LM sampling (extract, serve, prosan-lite) and SnD's public training-data order keep the
    documented 32-bit torch generators; DP-OPT and the SnD stage's noise must not."""
    from pathlib import Path

    root = Path(ppt.__file__).parent
    for rel in (
        "dpopt/tune.py",
        "dpopt/ensemble.py",
        "dpopt/selection.py",
        "dpopt/limited_domain.py",
        "dpopt/subsets.py",
        "stages/snd.py",
        "snd/pipeline.py",
    ):
        assert "record_torch_generator" not in (root / rel).read_text(), rel


def test_record_id_bytes_match_json_for_every_id_type():
    """The int fast path of the seed derivation gives json.dumps's bytes (seeded outputs unchanged)."""
    import json

    from ppt.rng import _id_bytes

    for v in [0, 7, -5, 10**30, -(10**40), True, False, "1", "é", 1.5, None, [1, "a"], {"b": 1, "a": 2}]:
        assert _id_bytes(v) == json.dumps(v, sort_keys=True, separators=(",", ":"), default=str).encode(), v
