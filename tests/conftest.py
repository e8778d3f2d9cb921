"""Shared fixtures. Tests never touch the network: hub libraries are forced offline at import."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


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
