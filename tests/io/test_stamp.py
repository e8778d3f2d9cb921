"""ppt.io.stamp: strict-JSON values (inf/nan) and provenance stamps."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ppt.io import RecordError, jsonable, stamp
from tests.io.helpers import jl, run


def test_jsonable_and_inf_encoding():
    obj = {
        "a": math.inf,
        "b": -math.inf,
        "c": math.nan,
        "t": (1, 2.5),
        "np": np.float32(0.5),
        "npi": np.int64(3),
        "arr": np.array([1.0, np.inf]),
        "tt": torch.tensor([1.5, float("inf")]),
        "ts": torch.tensor(2),
        "nested": [{"x": float("-inf")}],
    }
    j = jsonable(obj)
    assert j == {
        "a": "inf",
        "b": "-inf",
        "c": "nan",
        "t": [1, 2.5],
        "np": 0.5,
        "npi": 3,
        "arr": [1.0, "inf"],
        "tt": [1.5, "inf"],
        "ts": 2,
        "nested": [{"x": "-inf"}],
    }
    assert type(j["npi"]) is int

    code, out, _ = run(jl({"text": "a"}), fn=lambda b: [{"eps": math.inf, "v": np.float64(1.0)} for _ in b])
    assert out == [{"eps": "inf", "v": 1.0}]


def test_stamp_keeps_earlier_stages():
    from ppt import __version__

    d = {"text": "x", "ppt": {"sanitize": {"mechanism": "rantext", "version": "0.0.1"}}}
    out = stamp(d, "query", {"model": "m", "eps": math.inf})
    assert out is d
    assert d["ppt"]["sanitize"] == {"mechanism": "rantext", "version": "0.0.1"}
    assert d["ppt"]["query"] == {"model": "m", "eps": math.inf, "version": __version__}
    stamp(d, "query", {"model": "m2"})
    assert d["ppt"]["query"]["model"] == "m2"
    fresh = stamp({"text": "y"}, "sanitize", {})
    assert fresh["ppt"] == {"sanitize": {"version": __version__}}
    with pytest.raises(RecordError):
        stamp({"ppt": "user value"}, "x", {})
