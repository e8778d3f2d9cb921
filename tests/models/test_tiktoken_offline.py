"""ppt.models.tiktoken_offline: tiktoken encodings from the packaged files, with no network."""

from __future__ import annotations

import hashlib
import os

import pytest

from ppt.io import PptError
from tests.helpers import installed, needs


@pytest.fixture
def no_network(monkeypatch):
    """Fail loudly if anything tries to download."""
    import socket

    import tiktoken.load

    def refuse(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    try:
        import requests

        monkeypatch.setattr(requests, "get", refuse)
    except ImportError:  # pragma: no cover
        pass
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def fresh_tiktoken(monkeypatch):
    import tiktoken.registry

    from ppt.models import tiktoken_offline

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    monkeypatch.setattr(tiktoken_offline, "_memo", {})


TEXT = "Alice Smith (alice@example.com) lives at 42 Rue de Rivoli, Paris — née 1990. Ünïcödé ✓ 日本語"


@pytest.mark.parametrize(
    "name,n_vocab", [("cl100k_base", 100277), ("o200k_base", 200019), ("r50k_base", 50257), ("gpt2", 50257)]
)
def test_tiktoken_offline_round_trip(name, n_vocab, tmp_cache, no_network, fresh_tiktoken):
    from ppt.models import get_encoding
    from ppt.models.tiktoken_offline import RANK_FILE, cache_path

    if not installed(name):
        pytest.skip(f"{name} carrier not installed")
    enc = get_encoding(name)
    assert enc.name == name and enc.n_vocab == n_vocab
    ids = enc.encode(TEXT)
    assert enc.decode(ids) == TEXT
    assert enc.encode("<|endoftext|>", allowed_special="all") == [enc.eot_token]
    # the rank file sits where tiktoken looks for it: <ppt cache>/tiktoken/<sha1(url)>
    url = f"https://openaipublic.blob.core.windows.net/encodings/{RANK_FILE[name]}.tiktoken"
    target = tmp_cache / "tiktoken" / hashlib.sha1(url.encode()).hexdigest()
    assert target.is_file() and cache_path(RANK_FILE[name]) == target
    assert "TIKTOKEN_CACHE_DIR" not in os.environ  # restored after the call
    assert get_encoding(name) is enc


@needs("r50k_base")
def test_gpt2_equals_r50k(tmp_cache, no_network, fresh_tiktoken):
    from ppt.models import get_encoding

    g, r = get_encoding("gpt2"), get_encoding("r50k_base")
    assert g.encode(TEXT) == r.encode(TEXT)
    assert g.eot_token == 50256 and g.decode([50256]) == "<|endoftext|>"


@needs("cl100k_base")
def test_tiktoken_respects_user_cache_dir(tmp_path, tmp_cache, no_network, fresh_tiktoken, monkeypatch):
    from ppt.models import get_encoding

    user = tmp_path / "user-tiktoken"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(user))
    get_encoding("cl100k_base").encode("hi")
    assert len(list(user.iterdir())) == 1
    assert not (tmp_cache / "tiktoken").exists()


@needs("cl100k_base")
def test_tiktoken_repairs_a_corrupt_cache_file(tmp_cache, no_network, fresh_tiktoken):
    from ppt.models import get_encoding
    from ppt.models.tiktoken_offline import cache_path

    target = cache_path("cl100k_base")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"garbage")
    assert get_encoding("cl100k_base").decode(get_encoding("cl100k_base").encode(TEXT)) == TEXT
    assert target.stat().st_size > 1000


def test_tiktoken_unknown_encoding_offline(no_network, fresh_tiktoken):
    from ppt.models import get_encoding

    with pytest.raises(PptError) as e:
        get_encoding("p50k_base")
    assert "cl100k_base" in e.value.hint
