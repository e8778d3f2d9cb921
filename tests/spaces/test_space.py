"""ppt.spaces: space names, cached sensitivity and tables, the cl100k word rule."""

import numpy as np
import pytest
import torch

from ppt.cache import Cache
from ppt.spaces import parse_space_name, space_from_arrays


def test_space_name_sizes():
    assert parse_space_name("glove-6b-50d:5000") == ("glove-6b-50d", 5000)
    assert parse_space_name("cl100k-minilm") == ("cl100k-minilm", 11000)
    assert parse_space_name("/some/model") == ("/some/model", None)
    with pytest.raises(ValueError):
        parse_space_name("glove-6b-50d:x")


def test_sensitivity_and_tables_are_cached(tmp_path):
    emb = np.random.default_rng(0).normal(size=(30, 5)).astype(np.float32)
    sp = space_from_arrays("t", [f"w{i}" for i in range(30)], emb, cache=Cache(tmp_path))
    assert torch.allclose(sp.sensitivity, torch.from_numpy(emb.max(0) - emb.min(0)))
    rows = sp.sorted_rows(quiet=True)
    assert rows.idx.shape == (30, 30) and np.all(rows.idx[:, 0] == np.arange(30))
    again = sp.sorted_rows(quiet=True)
    assert again.artifact.path == rows.artifact.path
    idx, dist = sp.topk(5, quiet=True)
    assert idx.shape == (30, 5) and torch.all(dist[:, 0] == 0)


def test_cl100k_word_rule():
    from ppt.models import get_encoding
    from ppt.spaces.builders import cl100k_word_rows

    enc = get_encoding("cl100k_base")
    words, id_to_row = cl100k_word_rows(enc, 500)
    assert len(words) == 500 and len(set(words)) == 500
    assert all(w.isascii() and w.isalpha() and w == w.lower() for w in words)
    for variant in ("the", " the", " The"):
        ids = enc.encode(variant)
        assert len(ids) == 1 and words[id_to_row[ids[0]]] == "the"
    assert id_to_row[enc.encode(",")[0]] == -1
