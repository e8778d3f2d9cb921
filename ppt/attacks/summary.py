"""Success tallies and the summary record every attack writes: success rate, privacy = 1 - rate, and
a 95% Wilson score interval.

The interval treats each trial (an attacked token or n-gram) as independent, as the papers do; tokens
of one document are correlated, so read it as a lower bound on the real uncertainty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; (0, 1) when there are no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    denom = 1.0 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Tally:
    """Successes out of trials, accumulated over records."""

    successes: int = 0
    trials: int = 0

    def add(self, successes: int, trials: int) -> None:
        self.successes += int(successes)
        self.trials += int(trials)

    @property
    def rate(self) -> float | None:
        return self.successes / self.trials if self.trials else None

    def block(self) -> dict:
        """{trials, successes, success_rate, privacy, privacy_ci95}; rates are null without trials."""
        rate = self.rate
        lo, hi = wilson(self.successes, self.trials)
        return {
            "trials": self.trials,
            "successes": self.successes,
            "success_rate": rate,
            "privacy": None if rate is None else 1.0 - rate,
            "privacy_ci95": None if rate is None else [1.0 - hi, 1.0 - lo],
        }


def record_block(successes: int, trials: int) -> dict:
    """Per-record result: counts and rate (null when the record had nothing to attack)."""
    return {"successes": int(successes), "trials": int(trials), "rate": (successes / trials) if trials else None}
