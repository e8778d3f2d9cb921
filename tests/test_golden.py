"""Seeded output of every mechanism, policy and case mode is byte-identical to the committed golden files.

A change that alters seeded output on purpose regenerates them (``python -m tests.golden --write``) and
says why in CHANGELOG.md."""

from __future__ import annotations

import pytest

from tests import golden


@pytest.fixture(scope="module")
def tiny_lm_path(tiny_lm):
    return str(tiny_lm)  # the shared tiny model (conftest), the recipe golden.make_tiny_lm builds


# the fast lane keeps one golden of each glove-space kind (cheap tables); the rest build the default space
# or load a model in a real process each
FAST = {"santext", "custext+"}
SLOW = "builds the default space (cl100k-minilm) or loads a model in a real process"
CASES = [
    pytest.param(i, id=name, marks=() if name in FAST else pytest.mark.slow(reason=SLOW))
    for i, (name, _) in enumerate(golden.CONFIGS)
]


@pytest.mark.parametrize("index", CASES)
def test_seeded_output_matches_golden(index, tiny_lm_path):
    name, config = golden.CONFIGS[index]
    rc, out, err = golden.run(config, golden.seed_of(index), tiny_lm_path)
    assert rc in (0, 1), err
    expected = (golden.GOLDEN / f"{name}.jsonl").read_text()
    assert out.count("\n") == expected.count("\n") == 3 * len(golden.TEXTS)
    for got, want in zip(out.splitlines(), expected.splitlines()):
        assert golden.comparable(got) == golden.comparable(want)
