"""RANTEXT's two run-table samplers: numpy (CPU, no torch) and torch (CUDA; here on CPU tensors).

The distributional tests of the mechanism run both (tests/mechanisms/test_rantext.py, ``SAMPLERS``);
these check that the two agree draw for draw, that the torch one's draws do not depend on the batch,
that the conditional test has the power to see a doubled eps in either, and that the CPU sampler
never imports torch.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import stats

from ppt.mechanisms.rantext import Rantext
from ppt.mechanisms.rantext.runs import (
    DeviceRunTable,
    RunTable,
    build_runs,
    sample_prefix_block,
    sample_runs,
    sample_runs_torch,
)

ALPHA = 1e-6
RUNS_PY = Path(__file__).resolve().parents[2] / "ppt" / "mechanisms" / "rantext" / "runs.py"


def synthetic_table(n: int, V: int, seed: int) -> tuple[RunTable, np.ndarray]:
    """Sorted float16 rows with many ties (distance 0 first), as a run table, and the rows themselves."""
    rng = np.random.default_rng(seed)
    d = np.sort(np.round(rng.random((n, V)) * 40) / 20, axis=1).astype(np.float16)
    d[:, 0] = 0
    values, ends = build_runs(torch.from_numpy(d))
    return RunTable(values.numpy(), ends.numpy(), np.tile(np.arange(V), (n, 1))), d


def test_torch_sampler_matches_numpy_and_the_direct_form():
    n, V, eps = 4000, 300, 3.0
    table, d = synthetic_table(n, V, 1)
    rng = np.random.default_rng(2)
    rows = np.arange(n)
    r = rng.uniform(0.1, 2.3, n)  # from a handful of candidates to the whole row
    u = rng.random(n)
    o_np, s_np = sample_runs(table, rows, r, u, eps)
    o_t, s_t = sample_runs_torch(
        table.on_device("cpu"), torch.from_numpy(rows), torch.from_numpy(r), torch.from_numpy(u), eps
    )
    m = np.maximum((d.astype(np.float64) < r[:, None]).sum(1), 1)
    assert np.array_equal(s_np, m) and np.array_equal(s_t.numpy(), m)
    assert (o_np < m).all() and (o_t.numpy() < m).all()
    direct = sample_prefix_block(
        torch.from_numpy(d), torch.from_numpy(m), torch.from_numpy(eps / (2 * r)), torch.from_numpy(u)
    ).numpy()
    # identical up to ties at the last ulp of a float32 weight (the two exponentials may differ there)
    assert (o_t.numpy() == o_np).mean() > 0.999
    assert (o_np == direct).mean() > 0.999


def test_torch_sampler_draws_do_not_depend_on_the_batch():
    n, V, eps = 3000, 200, 2.0
    table, _ = synthetic_table(n, V, 3)
    dev = table.on_device("cpu")
    assert table.on_device("cpu") is dev  # one copy per device
    rng = np.random.default_rng(4)
    rows = torch.from_numpy(rng.integers(0, n, n))
    r = torch.from_numpy(rng.uniform(0.1, 2.3, n))
    u = torch.from_numpy(rng.random(n))
    whole, size = sample_runs_torch(dev, rows, r, u, eps)
    small, size_small = sample_runs_torch(dev, rows, r, u, eps, budget=1000)  # many blocks
    assert torch.equal(whole, small) and torch.equal(size, size_small)
    part = torch.from_numpy(rng.permutation(n)[:500])
    alone, _ = sample_runs_torch(dev, rows[part], r[part], u[part], eps)
    assert torch.equal(alone, whole[part])


def test_device_table_dtypes():
    table, _ = synthetic_table(10, 50, 5)
    dev = DeviceRunTable.from_table(table, "cpu")
    assert dev.values.dtype == torch.float16 and dev.idx.dtype == torch.int16
    assert torch.equal(dev.counts[:, 0], torch.from_numpy(table.counts[:, 0].astype(np.int32)))


@pytest.mark.statistical
@pytest.mark.parametrize("sampler", ["numpy", "torch"])
def test_conditional_test_sees_a_doubled_eps(array_space, sampler):
    """Mutation check of the conditional chi-square test in test_rantext.py: the same test, with the
    sampler given 2 * eps, rejects (so a sampler that doubled eps would fail it)."""
    words = [f"w{i}" for i in range(40)]
    space = array_space("tiny-mut", words, seed=7, dim=8)
    t, eps, n = 5, 4.0, 60_000
    sr = space.sorted_rows(quiet=True)
    d = np.empty(space.size)
    d[np.asarray(sr.idx[t], dtype=np.int64)] = np.asarray(sr.dist[t], dtype=np.float64)
    srt = np.sort(d)
    r = float((srt[20] + srt[21]) / 2)
    w = np.where(d < r, np.exp(eps / 2 * (1 - d / r)), 0.0)
    probs = w / w.sum()
    g = torch.Generator().manual_seed(20)
    u = torch.rand(n, generator=g, dtype=torch.float64)
    for factor, should_pass in ((1.0, True), (2.0, False)):
        mech = Rantext(eps * factor, space=space, z=1.0, sampler=sampler)
        out, _ = mech.sample_given_radius(torch.full((n,), t), torch.full((n,), r, dtype=torch.float64), u)
        counts = np.bincount(out.numpy(), minlength=space.size)
        keep = probs > 0
        assert counts[~keep].sum() == 0
        p = stats.chisquare(counts[keep], probs[keep] * n).pvalue
        assert (p > ALPHA) == should_pass, (factor, p)


def test_sampler_choice():
    words = [f"w{i}" for i in range(12)]
    from ppt.spaces import space_from_arrays

    space = space_from_arrays("tiny-choice", words, np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32))
    assert not Rantext(2.0, space=space).uses_torch_sampler  # auto on a CPU space: numpy
    assert Rantext(2.0, space=space, sampler="torch").uses_torch_sampler
    with pytest.raises(ValueError, match="sampler"):
        Rantext(2.0, space=space, sampler="gpu")
    mech = Rantext(2.0, space=space, z=1.0, sampler="torch")
    out, size = mech.sample_given_radius(torch.empty(0, dtype=torch.int64), torch.empty(0), torch.empty(0))
    assert out.numel() == 0 and size.numel() == 0


def test_cpu_sampler_imports_no_torch():
    """runs.py loaded on its own: building a table from numpy arrays and sampling never imports torch."""
    code = textwrap.dedent(f"""
        import importlib.util, sys
        import numpy as np
        spec = importlib.util.spec_from_file_location("runs_alone", {str(RUNS_PY)!r})
        runs = importlib.util.module_from_spec(spec)
        sys.modules["runs_alone"] = runs
        spec.loader.exec_module(runs)
        d = np.sort(np.round(np.random.default_rng(0).random((20, 30)) * 8) / 8, axis=1).astype(np.float16)
        d[:, 0] = 0
        K = max(np.unique(x).size for x in d)
        values = np.full((20, K), np.inf, np.float16)
        ends = np.full((20, K), 30, np.int32)
        for i, x in enumerate(d):
            v, c = np.unique(x, return_counts=True)
            values[i, : v.size], ends[i, : v.size] = v, np.cumsum(c)
        table = runs.RunTable(values, ends, np.tile(np.arange(30), (20, 1)))
        out, size = runs.sample_runs(table, np.arange(20), np.full(20, 0.6), np.linspace(0, 0.99, 20), 2.0)
        assert out.shape == (20,) and (size >= 1).all()
        assert "torch" not in sys.modules, "torch imported"
    """)
    res = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


@pytest.mark.statistical
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_sampler_matches_cpu():
    n, V, eps = 20_000, 300, 3.0
    table, _ = synthetic_table(500, V, 6)
    rng = np.random.default_rng(7)
    rows = rng.integers(0, 500, n)
    r = rng.uniform(0.1, 2.3, n)
    u = rng.random(n)
    o_np, s_np = sample_runs(table, rows, r, u, eps)
    o_c, s_c = sample_runs_torch(
        table.on_device("cuda"), torch.from_numpy(rows), torch.from_numpy(r), torch.from_numpy(u), eps
    )
    assert o_c.device.type == "cuda"
    assert np.array_equal(s_c.cpu().numpy(), s_np)
    assert (o_c.cpu().numpy() == o_np).mean() > 0.999  # parallel scans round differently: ties only
