"""Privacy events: validation, immutability, and a JSON round trip that holds for every event type."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import pytest

from ppt.accounting import (
    ClaimedEvent,
    ComposedEvent,
    ConditionalDpEvent,
    EmpiricalBoundEvent,
    GaussianEvent,
    LaplaceEvent,
    MetricDpEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    PureDpEvent,
    SelfComposedEvent,
    UnprotectedEvent,
    event_from_dict,
)
from ppt.accounting.events import EVENT_TYPES, iter_leaves

LEAVES = [
    PureDpEvent(3.0),
    MetricDpEvent(0.5, "GloVe-6B-50d L2 distance", 17.25),
    MetricDpEvent(2.0, "unit-norm L2"),
    ConditionalDpEvent(6.0, "given the adjacency list C_r"),
    UnprotectedEvent(4, "kept non-sensitive word"),
    EmpiricalBoundEvent(8.5, "clopper-pearson worst pair", 1 - 1e-6, 20_000),
    EmpiricalBoundEvent(math.inf, "exact support mismatch", 1.0),
    ClaimedEvent(6.0, "Cape (paper) eps + eps'"),
    ClaimedEvent(math.inf, "nobody"),
    LaplaceEvent(0.5),
    GaussianEvent(1.2),
]
NESTED = [
    PoissonSampledEvent(0.01, GaussianEvent(1.0)),
    SelfComposedEvent(PoissonSampledEvent(0.1, PureDpEvent(2.0)), 40),
    ComposedEvent([SelfComposedEvent(PureDpEvent(1.0), 3), UnprotectedEvent(1, "oov"), ClaimedEvent(1.0, "x")]),
    ComposedEvent([]),
    SelfComposedEvent(ComposedEvent([ConditionalDpEvent(1.0, "c"), EmpiricalBoundEvent(0.2, "m", 0.99)]), 0),
]


@pytest.mark.parametrize("event", LEAVES + NESTED, ids=lambda e: type(e).__name__)
def test_round_trip_through_json(event):
    d = event.to_dict()
    text = json.dumps(d, allow_nan=False)  # finite floats or "inf" only
    back = event_from_dict(json.loads(text))
    assert back == event
    assert type(back) is type(event)
    assert back.to_dict() == d
    assert PrivacyEvent.from_dict(d) == event
    assert type(event).from_dict(d) == event
    assert hash(back) == hash(event)


def test_every_type_is_covered_and_tags_are_unique():
    covered = {type(e) for e in LEAVES + NESTED}
    assert covered == set(EVENT_TYPES.values())
    assert len({cls.TYPE for cls in EVENT_TYPES.values()}) == len(EVENT_TYPES)


def test_to_dict_is_stable():
    assert PureDpEvent(3).to_dict() == {"type": "pure", "eps": 3.0}
    assert list(MetricDpEvent(1, "d").to_dict()) == ["type", "eps", "unit", "worst_case_eps"]
    assert MetricDpEvent(1, "d").to_dict()["worst_case_eps"] is None
    assert EmpiricalBoundEvent(math.inf, "m", 1.0).to_dict()["eps_lower"] == "inf"
    assert SelfComposedEvent(PureDpEvent(1), 2).to_dict() == {
        "type": "self_composed",
        "event": {"type": "pure", "eps": 1.0},
        "count": 2,
    }
    assert PoissonSampledEvent(0.5, LaplaceEvent(1)).to_dict() == {
        "type": "poisson_sampled",
        "sampling_probability": 0.5,
        "event": {"type": "laplace", "noise_multiplier": 1.0},
    }


def test_events_are_frozen_and_hashable():
    e = PureDpEvent(1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.eps = 2.0  # type: ignore[misc]
    c = ComposedEvent([e, e])
    assert isinstance(c.events, tuple)
    assert {c, ComposedEvent((e, e))} == {c}


@pytest.mark.parametrize(
    "make",
    [
        lambda: PureDpEvent(-1.0),
        lambda: PureDpEvent(math.inf),  # an infinite loss is an UnprotectedEvent, not a pure eps
        lambda: PureDpEvent(math.nan),
        lambda: PureDpEvent(True),
        lambda: MetricDpEvent(1.0, ""),
        lambda: MetricDpEvent(1.0, "d", -2.0),
        lambda: ConditionalDpEvent(1.0, " "),
        lambda: UnprotectedEvent(-1, "r"),
        lambda: UnprotectedEvent(1.5, "r"),
        lambda: EmpiricalBoundEvent(1.0, "m", 0.0),
        lambda: EmpiricalBoundEvent(1.0, "m", 1.5),
        lambda: EmpiricalBoundEvent(1.0, "m", 0.9, 0),
        lambda: LaplaceEvent(0.0),
        lambda: GaussianEvent(0.0),
        lambda: PoissonSampledEvent(1.5, PureDpEvent(1)),
        lambda: PoissonSampledEvent(0.5, 3.0),
        lambda: ComposedEvent([PureDpEvent(1), 2.0]),
        lambda: SelfComposedEvent(PureDpEvent(1), -1),
    ],
)
def test_invalid_events_are_rejected(make):
    with pytest.raises((ValueError, TypeError)):
        make()


def test_from_dict_rejects_unknown_types_keys_and_mismatches():
    with pytest.raises(ValueError, match="unknown privacy event type"):
        event_from_dict({"type": "zcdp", "rho": 1.0})
    with pytest.raises(ValueError, match="unknown keys"):
        event_from_dict({"type": "pure", "eps": 1.0, "delta": 0.0})
    with pytest.raises(ValueError, match="expected a 'claimed' event"):
        ClaimedEvent.from_dict(PureDpEvent(1.0).to_dict())
    with pytest.raises((ValueError, TypeError)):
        event_from_dict({"type": "pure", "eps": "nan"})


def test_iter_leaves_multiplies_counts():
    e = SelfComposedEvent(ComposedEvent([PureDpEvent(1), SelfComposedEvent(UnprotectedEvent(2, "r"), 3)]), 5)
    assert list(iter_leaves(e)) == [(PureDpEvent(1), 5), (UnprotectedEvent(2, "r"), 15)]


def test_import_is_cheap():
    code = (
        "import sys, ppt.accounting\n"
        "heavy = [m for m in ('torch', 'numpy', 'scipy', 'dp_accounting') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
