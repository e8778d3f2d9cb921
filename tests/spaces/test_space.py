"""Spaces: tokenization that rebuilds readable text, the cl100k word rule, cached tables."""

import numpy as np
import pytest
import torch

from ppt.cache import Cache
from ppt.spaces import parse_space_name, space_from_arrays
from ppt.spaces.tokenizers import WordTokenizer
from ppt.spaces.tokens import NUMBER, PUNCT, SPACE, WORD, kind_of, match_case, rebuild


@pytest.mark.parametrize("text", ["Hello, world!", "  two  spaces\nand lines ", "It's 3.5% of 2,000.", "", "naïve café — ok"])
def test_word_tokenizer_pieces_rebuild_the_text(text):
    tok = WordTokenizer(["hello", "world"]).tokenize(text)
    assert tok.text == text.rstrip() or tok.text == text
    assert rebuild(tok, list(tok.core)) == text.strip()


def test_kinds_are_judged_after_stripping_the_space():
    assert kind_of("2024") == NUMBER and kind_of("3.5%") == NUMBER
    assert kind_of("word") == WORD and kind_of("it's") == WORD
    assert kind_of(",") == PUNCT and kind_of("") == SPACE


def test_rebuild_keeps_spacing_and_drops_cleanly_with_each_case_mode():
    tok = WordTokenizer(["alice", "met", "bob"]).tokenize("Alice met BOB, today. he left")
    cores = ["carol", "saw", "dan", tok.core[3], None, tok.core[5], "she", "went"]
    # default: capitalise from the output's own sentences only (reveals nothing about the original)
    assert rebuild(tok, cores) == "Carol saw dan,. She went"
    assert rebuild(tok, cores, case="original") == "Carol saw DAN,. she went"  # leaks the case pattern
    assert rebuild(tok, cores, case="vocab") == "carol saw dan,. she went"
    assert match_case("paris", "London") == "Paris"


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
