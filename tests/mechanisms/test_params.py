"""Declared mechanism parameters (issue 23 item 5): one declaration checks, converts, lists and documents them."""

from __future__ import annotations

import json
import re

import pytest

from ppt.io import ExitCode, PptError
from ppt.mechanisms import mechanism_class
from ppt.mechanisms.params import Param, check_params
from tests.helpers import ppt


def test_a_param_converts_and_rejects_by_its_declaration():
    beta = Param("beta", 0.001, "h", low=0.0, high=1.0, open_low=True, open_high=True)
    assert beta.check("0.5", "tem") == 0.5 and beta.expects() == "a number in (0, 1)"
    for bad in (0, 1, 1.5, "x", True, float("nan"), None):
        with pytest.raises(ValueError, match=r"tem: beta must be a number in \(0, 1\)"):
            beta.check(bad, "tem")
    k = Param("k", 20, "h", type="int", low=1)
    assert k.check(3, "custext") == 3 and k.check("4", "custext") == 4
    for bad in (0, 2.5, "two"):
        with pytest.raises(ValueError):
            k.check(bad, "custext")
    z = Param("z", "calibrated", "h", choices=("calibrated", "paper"), low=0.0, open_low=True)
    assert z.check("paper", "rantext") == "paper" and z.check("2.5", "rantext") == 2.5
    with pytest.raises(ValueError, match="calibrated | paper or a number"):
        z.check(0, "rantext")
    assert Param("t", None, "h", nullable=True, high=1.0).check(None, "x") is None
    assert Param("f", None, "h", type="bool", nullable=True).check("true", "x") is True


def test_unknown_parameters_are_named_beside_the_known_ones():
    declared = (Param("a", 1, "h"), Param("hidden", 2, "h", internal=True))
    assert check_params("m", declared, {"a": "3"}) == {"a": 3.0, "hidden": 2}
    with pytest.raises(ValueError, match=r"m: unknown parameter\(s\) b, c; known: a$"):
        check_params("m", declared, {"b": 1, "c": 2})


@pytest.mark.parametrize(
    "mech, params, ok",
    [
        ("tem", {"beta": 0.01}, True),
        ("tem", {"beta": 1.0}, False),
        ("rantext", {"z": "paper"}, True),
        ("rantext", {"z": -1}, False),
        ("rantext", {"target_fraction": 1.5}, False),
        ("rantext", {"sampler": "gpu"}, False),
        ("custext", {"k": 5}, True),
        ("custext", {"k": 0}, False),
        ("custext", {"kk": 5}, False),
        ("santext+", {"w": 0.5, "p": "0"}, True),
        ("santext+", {"w": 0}, False),
        ("santext+", {"p": 1.5}, False),
        ("cape", {"buckets": "10", "utility": "additive"}, True),
        ("cape", {"buckets": 0}, False),
        ("cape", {"utility": "max"}, False),
        ("cape", {"logit_bound": 0}, False),
        ("cape", {"temperature": 1}, False),
    ],
)
def test_mechanisms_check_their_declared_parameters(mech, params, ok):
    cls = mechanism_class(mech)
    if ok:
        assert cls.check_params(params)[next(iter(params))] is not None
    else:
        with pytest.raises(ValueError, match=f"^{re.escape(mech)}: "):
            cls.check_params(params)


def test_defaults_and_mechs_listing_come_from_the_declaration():
    assert mechanism_class("tem").defaults == {"eps": 0.8, "beta": 0.001}
    assert mechanism_class("rantext").defaults == {"z": "calibrated", "target_fraction": None}
    assert mechanism_class("custext+").defaults == {"eps": 1.0, "k": 20}
    assert mechanism_class("santext+").defaults == {"eps": 0.8, "w": 0.9, "p": 0.3}
    assert mechanism_class("cape").defaults == {
        "model": "smollm2",
        "lambda_l": 0.5,
        "lambda_d": 1.0,
        "buckets": 50,
        "utility": "product",
        "logit_bound": None,
        "context": "auto",
        "dtype": None,
        "batching": "auto",
    }
    r = ppt("mechs", "--json")
    rows = {json.loads(line)["name"]: json.loads(line) for line in r.stdout.splitlines()}
    names = [p["name"] for p in rows["rantext"]["params"]]
    assert names == ["z", "target_fraction"]  # internal knobs (chunk sizes, sampler) are not listed
    assert rows["tem"]["params"][0]["expects"] == "a number in (0, 1)"


def test_a_bad_param_fails_before_the_space_loads():
    from ppt.stages.sanitize_spec import build_mechanism

    with pytest.raises(PptError) as e:
        build_mechanism("tem", 0.8, space="no-such-space-anywhere", params={"beta": 2})
    assert e.value.exit_code == ExitCode.USAGE and "tem: beta must be" in e.value.message
    r = ppt("sanitize", "-m", "custext", "-p", "k=0", stdin='{"text": "a"}\n')
    assert r.returncode == 2 and "custext: k must be an integer in [1, inf)" in r.stderr


def test_mechanisms_without_eps_list_none():
    """ProSan has no DP guarantee: `ppt mechs` must not print its placeholder eps (second reading, row 24)."""
    for name in ("prosan", "prosan-lite"):
        assert mechanism_class(name).describe(name)["default_eps"] is None
    assert mechanism_class("rantext").describe()["default_eps"] == 6.0
    r = ppt("mechs", "--json")
    rows = {json.loads(line)["name"]: json.loads(line) for line in r.stdout.splitlines()}
    assert all(rows[n]["default_eps"] is None for n in ("prosan", "prosan-lite") if n in rows)
