"""ppt.attacks.summary: Wilson intervals."""

from __future__ import annotations

import pytest

from ppt.attacks.summary import Tally, wilson


def test_wilson_known_values():
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)
    t = Tally()
    t.add(3, 4)
    b = t.block()
    assert b["success_rate"] == 0.75 and b["privacy"] == 0.25
    assert b["privacy_ci95"][0] < 0.25 < b["privacy_ci95"][1]
    assert Tally().block()["privacy"] is None
