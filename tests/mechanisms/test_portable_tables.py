"""CusText(+), SanText(+) and TEM: derived tables and seeded draws are the same bytes whatever the float
kernels (issue 36, item 1).

As tests/mechanisms/test_rantext_portable.py: every table and draw that decides a token is rebuilt in a
fresh cache in a subprocess with torch's ATen kernels, MKL's GEMM path and numpy's SIMD loops forced down
(one thread, other chunk and batch sizes), and must give the same digests as in this process.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from tests.mechanisms.test_rantext_portable import (
    TEXTS,
    V,
    _sha,
    assert_same_digests_with_kernels_forced_down,
    portable_space,
)


def _sanitize(mech, batch: int) -> str:
    from ppt.rng import record_generator

    texts = []
    for s0 in range(0, len(TEXTS), batch):
        part = TEXTS[s0 : s0 + batch]
        gens = [record_generator(36, i) for i in range(s0, s0 + len(part))]
        texts += [res.text for res in mech.sanitize_batch(part, gens)]
    return hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]


def digests(cache_root: str, *, batch: int, chunk: int) -> dict:
    """sha256 prefixes of CusText's groups and table, SanText's rows and draws, TEM's draws on
    :func:`portable_space`, built in ``cache_root`` (``chunk``: CusText's leaders per product, TEM's
    distance entries per block)."""
    import torch

    from ppt.mechanisms.custext import CusText, CusTextPlus, build_groups
    from ppt.mechanisms.santext import SanText, SanTextPlus
    from ppt.mechanisms.tem import TEM

    space = portable_space(Path(cache_root))
    out = {}
    rng = np.random.default_rng(5)
    n = 600
    rows = rng.integers(0, V, n)
    g = np.random.default_rng(9)

    # CusText: groups (a float product plus top-k) and the cumulative table (softmax, batched products)
    m, o = build_groups(space.embeddings, space.freq_rank, 20, chunk=chunk)
    out["custext-groups-build"] = _sha(m, o)
    for eps in (1.0, 7.0):
        mech = CusText(eps, space=space, quiet=True)
        members, offsets = mech.load_groups()
        out[f"custext-groups-eps{eps:g}"] = _sha(members, offsets)
        mech._load()
        out[f"custext-table-eps{eps:g}"] = _sha(mech.np_tables["cdf"])
        rand = mech.draw(n, np.random.default_rng(1))
        out[f"custext-draws-np-eps{eps:g}"] = _sha(mech.perturb_rows_np(rows, rand)[0])
        t, _ = mech.perturb_rows(torch.from_numpy(rows), {k: torch.from_numpy(v) for k, v in rand.items()})
        out[f"custext-draws-torch-eps{eps:g}"] = _sha(t.numpy())
    out["custext-sanitize"] = _sanitize(CusText(2.0, space=space, quiet=True), batch)
    out["custext+-sanitize"] = _sanitize(CusTextPlus(2.0, space=space, quiet=True), batch)

    # SanText: the gap rows, the sampler's probabilities, draws by both backends
    for eps in (0.8, 30.0):
        mech = SanText(eps, space=space, quiet=True)
        ids = torch.arange(0, V, 11)
        gaps = mech.gap_rows.gaps(ids).numpy()
        assert np.array_equal(gaps, mech.gap_rows.gaps_np(ids.numpy()))  # both backends: the same bits
        out[f"santext-gaps-eps{eps:g}"] = _sha(gaps)
        out[f"santext-probabilities-eps{eps:g}"] = _sha(mech.probabilities(ids).numpy())
        u = SanText.uniform(n, g)
        out[f"santext-draws-eps{eps:g}"] = _sha(mech.sample(torch.from_numpy(rows), torch.from_numpy(u)).numpy())
        out[f"santext-draws-np-eps{eps:g}"] = _sha(mech.sample_np(rows, u))
        assert out[f"santext-draws-np-eps{eps:g}"] == out[f"santext-draws-eps{eps:g}"]
    out["santext-sanitize"] = _sanitize(SanText(3.0, space=space, quiet=True), batch)
    out["santext+-sanitize"] = _sanitize(SanTextPlus(3.0, space=space, quiet=True), batch)

    # TEM: truncation and the exponential mechanism's weights
    for eps in (6.0, 40.0):
        mech = TEM(eps, space=space, quiet=True, chunk_entries=chunk * V)
        out[f"tem-gamma-eps{eps:g}"] = repr(mech.gamma)
        rand = mech.draw(n, np.random.default_rng(2))
        t, diag = mech.perturb_rows(torch.from_numpy(rows), {k: torch.from_numpy(v) for k, v in rand.items()})
        out[f"tem-draws-eps{eps:g}"] = _sha(t.numpy(), diag["bottom"].numpy(), diag["l_size"].numpy())
    out["tem-sanitize"] = _sanitize(TEM(6.0, space=space, quiet=True), batch)
    return out


def test_custext_santext_tem_tables_and_draws_do_not_depend_on_the_float_kernels(tmp_path):
    native = digests(str(tmp_path / "native"), batch=12, chunk=128)
    assert_same_digests_with_kernels_forced_down(
        native, "tests.mechanisms.test_portable_tables", tmp_path / "forced", batch=5, chunk=7
    )


def test_the_exact_square_root_is_correctly_rounded():
    """torch's CPU float64 sqrt is not (1 ulp off on ~1% of integers below 2**50, at every ATen level):
    :func:`ppt.spaces.distances.sqrt_` is, so the exact distances are the same bits on every CPU."""
    import math

    import torch

    from ppt.spaces.distances import sqrt_

    x = np.random.default_rng(0).integers(1, 2**50, 20000).astype(np.float64)
    ref = np.array([math.sqrt(v) for v in x])  # the IEEE square root
    assert np.array_equal(sqrt_(torch.from_numpy(x.copy())).numpy(), ref)
    assert np.array_equal(sqrt_(torch.from_numpy(x.reshape(100, 200).copy()).T).T.reshape(-1).numpy(), ref)
