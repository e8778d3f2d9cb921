"""Tiny random models for the Split-N-Denoise tests (built once per session, seconds on CPU)."""

from __future__ import annotations

import pytest

CORPUS = [
    "the market rallied after the bank cut rates",
    "the striker scored twice in the final",
    "a new phone was launched with a faster chip",
    "the minister resigned over the budget row",
    "the film won three awards at the festival",
    "shares fell as oil prices rose sharply",
    "the coach praised the young defender",
    "the software update fixed a security flaw",
    "voters head to the polls next week",
    "the band announced a world tour",
] * 3


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory):
    """A random 2-layer BERT with a WordPiece tokenizer, saved as a model directory."""
    from ppt.models._quiet import quiet_loading
    from ppt.testing import tiny_bert, wordpiece_tokenizer

    path = tmp_path_factory.mktemp("tiny-encoder")
    tok = wordpiece_tokenizer(CORPUS, vocab_size=120)
    model = tiny_bert(len(tok), seed=3)
    with quiet_loading(progress=False):
        tok.save_pretrained(path)
        model.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory):
    from ppt.testing import make_tiny_causal_lm

    return make_tiny_causal_lm(tmp_path_factory.mktemp("tiny-causal"))
