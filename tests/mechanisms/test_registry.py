"""The registry's defaults are the ones the mechanisms themselves use."""

import inspect

import pytest

from ppt.mechanisms import MECHANISMS, mechanism_class


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_cli_default_eps_matches_the_mechanism(name):
    cls = mechanism_class(name)
    ctor = inspect.signature(cls.__init__).parameters["eps"].default
    if ctor is not inspect.Parameter.empty:
        assert cls.default_eps == ctor
    if "eps" in getattr(cls, "defaults", {}):
        assert cls.default_eps == cls.defaults["eps"]


def test_paper_defaults():
    assert (
        mechanism_class("santext+").default_eps == 0.8
    )  # not the paper's 3: worst case <= 20 on glove-6b-50d (issue 16)
    assert mechanism_class("tem").default_eps == 0.8
    assert mechanism_class("custext+").default_eps == 1.0
    assert mechanism_class("rantext").default_eps == 6.0
