"""Fixtures for the attack tests: a small random word space."""

from __future__ import annotations

import numpy as np
import pytest

from ppt.spaces import space_from_arrays
from tests.attacks import WORDS


@pytest.fixture
def space(tmp_cache):
    rng = np.random.default_rng(0)
    return space_from_arrays("test-words", WORDS, rng.normal(size=(len(WORDS), 8)))
