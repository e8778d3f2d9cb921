"""RANTEXT's derived artifacts and draws are the same bytes whatever the float kernels' reduction order (issue 36).

Every float computation that decides a token (the distance rows and their float16 runs, the calibrated Z,
the Laplace radii, the run weights and their cumulative sums) is recomputed here in a fresh cache with the
CPU's kernels forced down -- torch's ATen kernels to their scalar ``default`` level, MKL to its
``COMPATIBLE`` code path (other GEMM kernels: the same class of change as another CPU model), numpy's
dispatched SIMD loops (``exp``, ...) to the baseline, one thread -- and with other block, chunk and batch
sizes, and must give the same digests as the native kernels in this process. A GEMM's or a vectorised
exponential's last bits change with all of these, so a table or a draw that depended on them fails here.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
V, DIM = 1200, 384  # MiniLM's width, so the GEMMs take the same kinds of kernels as on the default space
WORDS = [f"w{i}" for i in range(V)]
TEXTS = [" ".join(WORDS[(7 * k + 13 * j) % V] for j in range(40)) for k in range(12)]


def _sha(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def portable_space(cache_root: Path):
    """Unit-norm float32 rows (arbitrary float32 bits, not on a grid): distances in [0, 2] as on MiniLM."""
    from ppt.cache import Cache
    from ppt.spaces import space_from_arrays

    emb = np.random.default_rng(36).normal(size=(V, DIM))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return space_from_arrays("portable", WORDS, emb.astype(np.float32), cache=Cache(cache_root))


def digests(cache_root: str, *, rows_chunk: int, block: int, budget: int, norm_chunk: int, batch: int) -> dict:
    """sha256 prefixes of every RANTEXT artifact and draw on :func:`portable_space`, built in ``cache_root``."""
    import torch

    from ppt.mechanisms.rantext import Rantext
    from ppt.mechanisms.rantext.runs import (
        _pick_runs_torch,
        pick_runs,
        prefix_lengths,
        sample_runs,
        sample_runs_torch,
        weight_scale,
    )
    from ppt.rng import record_generator
    from ppt.samplers.laplace import laplace_norms_seeded
    from ppt.spaces.distances import distance_rows

    space = portable_space(Path(cache_root))
    out = {}
    sr = space.sorted_rows(quiet=True, chunk=rows_chunk)
    out["sorted-rows"] = _sha(sr.idx, sr.dist)
    ids = torch.arange(0, V, 7)
    out["distance-rows"] = _sha(distance_rows(space, ids, block=block).numpy())
    out["distance-rows-f64"] = _sha(distance_rows(space, ids, block=block, dtype=torch.float64).numpy())
    for eps in (1.0, 6.0):
        mech = Rantext(eps, space=space, quiet=True)
        out[f"calibration-eps{eps:g}"] = repr((mech.calibration.z, mech.calibration.realized_median_fraction))
    mech = Rantext(6.0, space=space, quiet=True, chunk_entries=budget)
    table = mech.run_table
    out["run-table"] = _sha(table.values, table.ends, table.idx)
    n = 4000
    r = laplace_norms_seeded(n, mech._scale2, 0x36, chunk=norm_chunk)
    out["laplace-norms"] = _sha(r)
    rng = np.random.default_rng(1)
    rows = rng.integers(0, V, n)
    u = rng.random(n)
    o, s = sample_runs(table, rows, r, u, 6.0, budget)
    out["sample-runs"] = _sha(o, s)
    # the weights' last bits, seen through where each uniform falls inside its run (one block of positions)
    k = 500
    kr = np.maximum(prefix_lengths(table.values, rows[:k], r[:k]), 1)
    run, frac = pick_runs(table.values[rows[:k]], table.counts[rows[:k]], kr, weight_scale(6.0 / (2 * r[:k])), u[:k])
    out["pick-runs"] = _sha(run, frac)
    dev = table.on_device("cpu")
    rt, ft = _pick_runs_torch(
        dev.values[torch.from_numpy(rows[:k])],
        dev.counts[torch.from_numpy(rows[:k])],
        torch.from_numpy(kr),
        torch.from_numpy(weight_scale(6.0 / (2 * r[:k]))),
        torch.from_numpy(u[:k]),
    )
    out["pick-runs-torch"] = _sha(rt.numpy(), ft.numpy())
    ot, st = sample_runs_torch(dev, torch.from_numpy(rows), torch.from_numpy(r), torch.from_numpy(u), 6.0, budget)
    out["sample-runs-torch"] = _sha(ot.numpy(), st.numpy())
    # the whole pipeline, seeded, in batches of ``batch`` records (each record's own generator)
    texts = []
    for s0 in range(0, len(TEXTS), batch):
        part = TEXTS[s0 : s0 + batch]
        gens = [record_generator(36, i) for i in range(s0, s0 + len(part))]
        texts += [res.text for res in mech.sanitize_batch(part, gens)]
    out["sanitize"] = hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]
    return out


def _forced_down_env() -> dict:
    """This process's environment with every float kernel choice we can reach from outside forced down."""
    from numpy._core import _multiarray_umath as mu

    env = dict(os.environ)
    env["ATEN_CPU_CAPABILITY"] = "default"  # torch: scalar kernels instead of AVX2/AVX512 (SLEEF) ones
    env["MKL_CBWR"] = "COMPATIBLE"  # MKL: its most conservative GEMM code path
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = "1"
    found = [f for f in mu.__cpu_dispatch__ if mu.__cpu_features__.get(f)]
    if found:  # numpy: the baseline loops instead of the dispatched SIMD ones
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(found)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def assert_same_digests_with_kernels_forced_down(native: dict, module: str, cache_root: Path, **sizes) -> None:
    """``module.digests(cache_root, **sizes)`` recomputed in a subprocess with the float kernels forced down
    (:func:`_forced_down_env`, one thread) gives the same bytes as ``native``."""
    code = (
        "import json, torch\n"
        "torch.set_num_threads(1)\n"
        f"from {module} import digests\n"
        f"print(json.dumps(digests({str(cache_root)!r}, **{sizes!r})))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_forced_down_env(), capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    forced = json.loads(res.stdout.strip().splitlines()[-1])
    differ = sorted(k for k in native if native[k] != forced.get(k))
    assert not differ, f"not the same bytes with the kernels forced down: {differ}"


def test_rantext_artifacts_and_draws_do_not_depend_on_the_float_kernels(tmp_path):
    native = digests(str(tmp_path / "native"), rows_chunk=512, block=64, budget=1 << 18, norm_chunk=8192, batch=12)
    assert_same_digests_with_kernels_forced_down(
        native,
        "tests.mechanisms.test_rantext_portable",
        tmp_path / "forced",
        rows_chunk=97,
        block=16,
        budget=5000,
        norm_chunk=333,
        batch=5,
    )


def test_exp2_grid_is_exp_on_its_grid_and_the_torch_twin_gives_the_same_bits():
    import torch

    from ppt.samplers.portable import LOG2E_GRID, exp2_grid_np, exp2_grid_torch

    x = np.concatenate([-np.random.default_rng(0).random(100_000) * 720, [0.0, -0.0, -np.inf, -707.0, -709.0]])
    t = x * LOG2E_GRID
    got = exp2_grid_np(t)
    assert np.array_equal(exp2_grid_torch(torch.from_numpy(t)).numpy(), got)
    ref = np.exp(x)
    live = ref > 2.0**-1021
    assert np.abs(got[live] / ref[live] - 1).max() < 3.5e-7  # the exponent on a 2**-20 grid
    assert (got[~live] == 0).all() and got[-5] == 1.0 and got[-4] == 1.0
    # a grid point is hit exactly (up to the one rounded product of two table entries)
    q = np.arange(-(3 << 20), 1, 1021, dtype=np.float64)
    assert np.abs(exp2_grid_np(q) / np.exp2(q / 2**20) - 1).max() < 1e-15


def test_exact_distances_are_the_float64_distances_of_grid_rows():
    import torch

    from ppt.spaces.distances import ExactGrid

    rows = np.random.default_rng(2).normal(size=(300, 384))
    grid = np.round(rows * 2**16) / 2**16  # on the default space's grid: represented exactly
    g = ExactGrid(torch.from_numpy(grid.astype(np.float32)))
    d = g.distances(torch.arange(40), "l2").numpy()
    ref = np.sqrt(((grid[:40, None, :] - grid[None, :, :]) ** 2).sum(-1))
    assert np.abs(d - ref).max() < 1e-12 * ref.max()
    assert (np.diag(d) == 0).all()
    # cosine: 1 - cos from the same integers; a zero row is at distance 1 from everything else
    c = g.distances(torch.arange(40), "cosine").numpy()
    n = np.linalg.norm(grid, axis=1)
    refc = np.clip(1 - grid[:40] @ grid.T / (n[:40, None] * n[None]), 0, None)
    np.fill_diagonal(refc, 0.0)
    assert np.abs(c - refc).max() < 1e-12
    z = ExactGrid(torch.tensor([[0.0, 0.0], [1.0, 2.0]])).distances(torch.arange(2), "cosine")
    assert z.tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_laplace_norms_are_summed_exactly():
    from ppt.samplers.laplace import grid_exponent, laplace_norms_seeded

    b2 = np.random.default_rng(3).random(384) ** 2 * 0.01
    r = laplace_norms_seeded(5000, b2, 7)
    e = np.random.Generator(np.random.PCG64(0)).standard_exponential((5000, 384))  # same law, any stream
    assert 0.5 < np.median(r) / np.median(np.sqrt((e * e) @ b2)) < 1.5
    # the terms' grid: the largest possible term (e = 64) stays below 2**53 / d, so the sum is exact
    S = grid_exponent(b2)
    assert b2.max() * 64.0**2 * 2.0**S * 384 <= 2.0**53
    # the same bits whatever the chunking
    assert np.array_equal(laplace_norms_seeded(5000, b2, 7, chunk=333), r)
