"""The shared token pipeline: every built-in mechanism (Cape included) runs its sanitize_batch, and the
generator facts its draw order relies on."""

from __future__ import annotations

import pytest
import torch

from ppt.mechanisms import MECHANISMS, mechanism_class
from ppt.mechanisms.pipeline import TokenPipeline
from ppt.rng import record_generator


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_builtins_run_the_shared_pipeline(name):
    cls = mechanism_class(name)
    if getattr(cls, "reports_pairs", True) is False:  # a whole-text rewrite (prosan-lite): no tokens to pipe
        from ppt.mechanisms.base import Mechanism

        assert issubclass(cls, Mechanism) and not issubclass(cls, TokenPipeline)
        return
    assert issubclass(cls, TokenPipeline)
    assert cls.sanitize_batch is TokenPipeline.sanitize_batch


def test_size_zero_draws_do_not_advance_a_generator():
    """The pipeline draws uniform replacements only for records that have some; Cape used to draw a
    size-0 tensor for the others, which leaves the generator exactly where it was."""
    g = record_generator(5, 0)
    state = g.bit_generator.state
    g.integers(0, 49_000, size=0)
    g.random((0, 2))
    assert g.bit_generator.state == state
    g.random(1)
    assert g.bit_generator.state != state
