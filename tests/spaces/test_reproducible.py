"""A computed space's bytes, and so its identity, do not depend on float noise (issue 22): rows are computed in
float64 and rounded to the 2**-16 grid before they are stored and hashed."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from ppt.spaces.builders import BUILDER_VERSION, GRID_BITS, to_grid

ROOT = Path(__file__).resolve().parents[2]
WORDS = [
    "river",
    "bank",
    "money",
    "paris",
    "doctor",
    "medicine",
    "the",
    "a",
    "zanzibar",
    "quick",
    "fox",
    "lazy",
    "dog",
    "station",
    "meeting",
    "notes",
    "thanks",
    "patient",
    "diabetes",
    "secret",
]


def test_to_grid_rounds_to_multiples_of_the_grid_exactly_in_float32():
    x = np.random.default_rng(0).normal(scale=0.1, size=(50, 7))
    g = to_grid(x)
    assert g.dtype == np.float32
    scaled = g.astype(np.float64) * 2.0**GRID_BITS
    assert np.array_equal(scaled, np.rint(scaled))  # on the grid, exactly representable
    assert np.abs(g - x).max() <= 2.0 ** -(GRID_BITS + 1) + 1e-12
    # noise far below the grid spacing is absorbed (away from the midpoints between grid values)
    assert np.array_equal(to_grid(x + 1e-12), g)


def _encoder(dtype):
    from ppt.models.encoder import SentenceEncoder
    from ppt.testing.models import bert_tokenizer, tiny_bert

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    model = tiny_bert(len(vocab), seed=3).bert.to(dtype)
    return SentenceEncoder(model, bert_tokenizer(vocab), "cpu", name="tiny")


def _digest(encoder, batch_size: int, threads: int) -> str:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        rows = encoder.encode(WORDS * 3, batch_size=batch_size).numpy()
    finally:
        torch.set_num_threads(before)
    return hashlib.sha256(to_grid(rows).tobytes()).hexdigest()


def test_float64_rows_on_the_grid_are_the_same_bytes_for_any_batch_shape_and_thread_count():
    enc = _encoder(torch.float64)
    assert enc.encode(["river"]).dtype == torch.float64  # float64 end to end, normalisation included
    digests = {_digest(enc, bs, th) for bs in (1, 4, 60) for th in (1, 2)}
    assert len(digests) == 1


def test_float32_encoder_still_returns_float32_rows():
    assert _encoder(torch.float32).encode(["river", "bank"]).dtype == torch.float32


def test_readme_goldens_and_docs_cite_one_default_space_hash():
    """The default space's identity is written in README's stamp, the goldens and the docs: one value."""
    cited = set()
    for path in [
        ROOT / "README.md",
        *sorted((ROOT / "tests" / "data" / "golden").glob("rantext*.jsonl")),
        ROOT / "ppt" / "mechanisms" / "signature.py",
        ROOT / "ppt" / "cli" / "mechs_cmd.py",
    ]:
        cited |= set(re.findall(r"space:cl100k-minilm:11000#([0-9a-f]{8})", path.read_text(encoding="utf-8")))
    assert len(cited) == 1, cited
    assert BUILDER_VERSION >= 2


@pytest.mark.slow(reason="builds or reads the real default space (cl100k-minilm)")
def test_default_space_hash_is_the_committed_one():
    """Built (or read from the suite's own cache) here, the default space hashes to what the goldens cite."""
    from ppt.spaces import load_space

    want = re.search(r"space:cl100k-minilm:11000#([0-9a-f]{8})", (ROOT / "README.md").read_text()).group(1)
    assert load_space("cl100k-minilm", device="cpu", quiet=True).hash[:8] == want
