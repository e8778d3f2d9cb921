"""Distance kernels against a brute-force reference."""

import numpy as np
import pytest
import torch

from ppt.spaces import distances


@pytest.fixture
def emb():
    g = torch.Generator().manual_seed(0)
    return torch.randn(300, 16, generator=g)


@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_pairwise_matches_bruteforce(emb, metric):
    d = distances.pairwise(emb[:50], emb, metric)
    if metric == "l2":
        ref = torch.cdist(emb[:50].double(), emb.double())
    else:
        ref = 1 - torch.nn.functional.cosine_similarity(emb[:50, None].double(), emb[None].double(), dim=2)
    # the GEMM form loses precision only near zero (sqrt of round-off); rows apart agree tightly
    assert torch.allclose(d.double(), ref, atol=5e-3)
    off = ref > 0.5
    assert torch.allclose(d.double()[off], ref[off], rtol=1e-4)


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_topk_independent_of_chunk(emb, chunk):
    idx, dist = distances.topk_neighbors(emb, 10, "l2", chunk=chunk)
    ref = torch.cdist(emb.double(), emb.double())
    rv, ri = torch.topk(ref, 10, dim=1, largest=False)
    assert torch.equal(idx[:, 0], torch.arange(300))  # itself first, at distance exactly 0
    assert torch.all(dist[:, 0] == 0)
    assert torch.allclose(dist.double(), rv, atol=1e-4)
    assert (idx == ri).float().mean() > 0.999


def test_sorted_rows_files(emb, tmp_path):
    itype, shape = distances.sorted_rows_to_files(emb, tmp_path / "i.npy", tmp_path / "d.npy", chunk=64)
    assert itype == np.uint16 and shape == (300, 300)
    idx = np.load(tmp_path / "i.npy", mmap_mode="r")
    dist = np.load(tmp_path / "d.npy", mmap_mode="r")
    ref = torch.cdist(emb.double(), emb.double()).numpy()
    assert np.all(np.diff(dist.astype(np.float32), axis=1) >= 0)  # rows sorted
    assert np.all(idx[:, 0] == np.arange(300))
    # each row is a permutation, and the distances are the true ones at float16 precision
    assert np.all(np.sort(idx, axis=1) == np.arange(300))
    np.testing.assert_allclose(
        dist.astype(np.float64), np.take_along_axis(ref, idx.astype(np.int64), 1), rtol=2e-3, atol=2e-3
    )


def test_index_dtype():
    assert distances.index_dtype(65536) == np.uint16
    assert distances.index_dtype(65537) == np.uint32


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cpu_and_gpu_agree(emb):
    c_idx, c_d = distances.topk_neighbors(emb, 10)
    g_idx, g_d = distances.topk_neighbors(emb.cuda(), 10)
    assert torch.allclose(c_d, g_d, atol=1e-4)
    assert (c_idx == g_idx).float().mean() > 0.999
