"""Shared fixtures. Tests never touch the network: hub libraries are forced offline at import."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

# Tests read nothing of the user's: spaces and tables go to the suite's own cache (PPT_TEST_CACHE, default
# .pytest_cache/ppt-cache in the checkout: built on the first run, reused by later ones, never the
# user's PPT_CACHE, whose artifacts another build of ppt may have made). Child processes inherit it.
TEST_CACHE = Path(
    os.environ.get("PPT_TEST_CACHE") or Path(__file__).resolve().parents[1] / ".pytest_cache" / "ppt-cache"
)
TEST_CACHE.mkdir(parents=True, exist_ok=True)
os.environ["PPT_CACHE"] = str(TEST_CACHE)
os.environ.pop("TIKTOKEN_CACHE_DIR", None)

# pytest started under nohup or as a background job has SIGINT/SIGHUP ignored, and its child processes
# would inherit that (ppt keeps an ignored signal ignored, on purpose): the signal tests need them live
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


OPT_IN_MARKERS = ("integration", "ray", "gpu")  # real models / a Ray cluster / CUDA: only when -m names them


def pytest_collection_modifyitems(config, items):
    """Deselect integration, ray and gpu tests unless the -m expression names them, so any lane (the whole
    suite, ``-m "not slow"``) leaves them out and ``-m integration`` / ``-m ray`` / ``-m gpu`` runs them;
    a selected gpu test skips, saying why, where torch sees no CUDA device."""
    expr = config.getoption("markexpr") or ""
    skip = [m for m in OPT_IN_MARKERS if m not in expr]
    if skip:
        keep, drop = [], []
        for item in items:
            (drop if any(item.get_closest_marker(m) for m in skip) else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu and not cuda_available():
        reason = pytest.mark.skip(reason="gpu: torch sees no CUDA device (run on a GPU: scripts/gpu_kit.sh run)")
        for item in gpu:
            item.add_marker(reason)


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    """A private, empty PPT_CACHE (and no user TIKTOKEN_CACHE_DIR) for one test."""
    cache = tmp_path / "ppt-cache"
    cache.mkdir()
    monkeypatch.setenv("PPT_CACHE", str(cache))
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    return cache


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory):
    """A tiny random causal LM saved as a model directory (generation, extract, serve), built once."""
    from ppt.testing import make_tiny_causal_lm

    return make_tiny_causal_lm(tmp_path_factory.getbasetemp() / "tiny-lm")


@pytest.fixture
def array_space(tmp_path):
    """Build a tiny space from random arrays: ``array_space(name, words, seed=, dim=, scale=1.0)`` embeds each
    word as a float32 standard normal row (times ``scale``), cached under this test's tmp_path."""
    import numpy as np

    from ppt.cache import Cache
    from ppt.spaces import space_from_arrays

    def build(name: str, words: list[str], *, seed: int, dim: int, scale: float = 1.0):
        emb = np.random.default_rng(seed).normal(size=(len(words), dim)).astype(np.float32)
        if scale != 1.0:
            emb = emb * scale
        return space_from_arrays(name, list(words), emb, cache=Cache(tmp_path / "cache"))

    return build
