"""The shared token pipeline: every built-in mechanism (Cape included) runs its sanitize_batch, and the
generator facts its draw order relies on."""

from __future__ import annotations

import pytest

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


def test_accounting_to_dict_is_asdict_with_extra_merged_and_copies_containers():
    from dataclasses import asdict

    from ppt.mechanisms.accounting import Accounting

    a = Accounting(
        60,
        40,
        kept={"stopword": 10},
        dropped={"oov": 1},
        extra={"adjacency_list_size": {"median": 12.0, "min": 1, "max": 90}, "sizes": [1, 2]},
    )
    expected = asdict(a)
    expected.update(expected.pop("extra"))
    d = a.to_dict()
    assert d == expected and list(d) == list(expected)
    d["kept"]["x"] = d["adjacency_list_size"]["min"] = 5
    d["sizes"].append(3)
    assert a.kept == {"stopword": 10} and a.extra["adjacency_list_size"]["min"] == 1 and a.extra["sizes"] == [1, 2]
