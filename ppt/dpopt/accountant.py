"""The DP-OPT budget: every LimitedDomain query (success or failure) as a privacy event, composed by
dp-accounting, consulted before each query.

Per query: each disjoint subset votes with probability ``rate`` (Poisson, independently per query), and the
release is (eps0, delta0)-DP in the subset's vote when one vote moves (see limited_domain: Gumbel(2/eps0) and
the +2 threshold slack). A record sits in one subset, so the output is (1-q) R + q A with the record and
(1-q) R + q B without it (R: its subset silent; A, B: its vote from either meta-prompt). R lies between A and B
(a silent subset is a monotone change, eps0/2 from each), so the pure part of one query is at most
eps' = ln(1 + q (e^eps0 - 1)) in both directions (a second reading proved ln((1-q+q e^(eps0/2)) /
(1-q+q e^(-eps0/2))) <= eps' algebraically). Every eps'-DP mechanism is dominated, in both directions, by
binary randomized response at eps' (Kairouz, Oh & Viswanath), so

* ``pld`` (default): dp-accounting's PLD of randomized response at eps' (a symmetric pair, so one curve serves
  both directions), self-composed T times: tight for that pair up to discretization (tests compare it with the
  exact binomial computation).
* ``rdp``: the same queries as ppt.accounting events, ``PoissonSampledEvent(q, PureDpEvent(eps0))``,
  through ``ppt.accounting.rdp_epsilon`` (randomized response at the amplified eps; looser, still valid).

Before this, the PLD composed the remove-direction pair ((1-q) RR(0) + q RR(1), RR(0)), which is not a
dominating pair in the reverse direction (Zhu, Dong & Wang 2022; Lebeda et al. 2024): sequences within the
argument's own assumptions exceeded its printed eps. The proven figure is larger at many queries (11.6 vs 8.0
at eps0 1, q 0.2, 62 queries) and the same at a few (7.03 at 4 queries, eps0 2, q 0.75).

The LimitedDomain deltas add: T q delta0 (union bound), so the composed eps is computed at
delta - T q delta0.

Neighbouring relation: add or remove one record. Under substitution (one record replaced) a record can change
two subsets' votes, and generation and selection (disjoint splits, parallel composition under add/remove) can
both see the change: their eps add (the stamp says so).

Selection runs on a disjoint validation split (parallel composition): the run is (max(eps_gen, eps_sel),
delta)-DP under add/remove. The state is plain JSON so a checkpoint can carry it and a resumed run never
re-spends.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ppt.accounting import PoissonSampledEvent, PureDpEvent, SelfComposedEvent

METHODS = ("pld", "rdp")


def query_event(eps0: float, rate: float):
    """The privacy event of one LimitedDomain query over Poisson-participating subsets."""
    return PoissonSampledEvent(rate, PureDpEvent(eps0))


def composed_epsilon(eps0: float, rate: float, delta0: float, queries: int, delta: float, method: str = "pld") -> float:
    """eps of ``queries`` queries at total ``delta`` (inf when their LimitedDomain deltas use it all up)."""
    if queries <= 0:
        return 0.0
    if math.isinf(eps0):
        return math.inf
    rest = delta - queries * rate * delta0
    if rest <= 0:
        return math.inf
    if method == "pld":
        return float(query_pld(eps0, rate).self_compose(queries).get_epsilon_for_delta(rest))
    from ppt.accounting import rdp_epsilon

    return float(rdp_epsilon(SelfComposedEvent(query_event(eps0, rate), queries), rest))


def amplified_eps(eps0: float, rate: float) -> float:
    """eps' = ln(1 + q (e^eps0 - 1)): one query's pure eps, both directions (see the module docstring)."""
    return math.log1p(rate * math.expm1(eps0))


def query_pair(eps0: float, rate: float) -> tuple[dict[int, float], dict[int, float]]:
    """(upper, lower) probability mass functions of binary randomized response at :func:`amplified_eps`: the
    proven dominating pair of one query (symmetric: the reversed pair is the same up to relabelling)."""
    p = 1.0 / (1.0 + math.exp(-amplified_eps(eps0, rate)))
    return {1: p, 0: 1.0 - p}, {1: 1.0 - p, 0: p}


def subsampled_rr(eps0: float, rate: float) -> tuple[dict[int, float], dict[int, float]]:
    """(upper, lower) probability mass functions of Poisson-subsampled binary randomized response, remove
    direction: upper = (1-q) RR(0) + q RR(1), lower = RR(0); outcome 1 is the truthful answer for 1. The pair
    the accountant composed before it used :func:`query_pair` (kept for comparisons: not a dominating pair in
    the reverse direction)."""
    p = 1.0 / (1.0 + math.exp(-eps0))  # P[RR(b) = b]
    up1 = (1 - rate) * (1 - p) + rate * p
    return {1: up1, 0: 1.0 - up1}, {1: 1.0 - p, 0: p}


_PLD_CACHE: dict[tuple[float, float, float], Any] = {}


def query_pld(eps0: float, rate: float, interval: float = 1e-4):
    """dp-accounting's privacy-loss distribution of one query (:func:`query_pair`, both directions)."""
    key = (eps0, rate, interval)
    if key not in _PLD_CACHE:
        from dp_accounting.pld import privacy_loss_distribution as pld_lib

        upper, lower = query_pair(eps0, rate)
        _PLD_CACHE[key] = pld_lib.from_two_probability_mass_functions(
            {k: math.log(v) for k, v in lower.items()},
            {k: math.log(v) for k, v in upper.items()},
            pessimistic_estimate=True,
            value_discretization_interval=interval,
            symmetric=True,
        )
    return _PLD_CACHE[key]


def published_epsilon(
    eps0: float, rate: float, delta0: float, queries: int, delta: float, method: str = "pld"
) -> float:
    """What the published code claims for Gumbel(1/eps0) noise: each query counted as eps0 (it is 2 eps0)."""
    return composed_epsilon(eps0, rate, delta0, queries, delta, method)


@dataclass
class Accountant:
    """Budget (eps, delta) for generation; per-query (eps0, delta0) at participation ``rate``."""

    eps: float
    delta: float
    eps0: float
    delta0: float
    rate: float
    method: str = "pld"
    cap: int = 100_000
    queries: int = 0
    failures: int = 0
    limit: int | None = field(default=None)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"accountant must be one of {METHODS}")
        if not (self.eps > 0 and 0 < self.delta < 1 and self.eps0 > 0 and 0 < self.delta0 < 1 and 0 < self.rate <= 1):
            raise ValueError("need eps > 0, 0 < delta < 1, eps0 > 0, 0 < delta0 < 1, 0 < rate <= 1")

    @property
    def private(self) -> bool:
        return not math.isinf(self.eps)

    def epsilon(self, queries: int | None = None) -> float:
        """eps spent after ``queries`` (default: the ones made so far)."""
        q = self.queries if queries is None else queries
        if not self.private:
            return math.inf if q else 0.0
        return composed_epsilon(self.eps0, self.rate, self.delta0, q, self.delta, self.method)

    def max_queries(self) -> int:
        """The most queries the budget covers (monotone in T: found by doubling, then bisection)."""
        if self.limit is None:
            if not self.private:
                self.limit = self.cap
            elif self.epsilon(1) > self.eps:
                self.limit = 0
            else:
                lo, hi = 1, 2
                while hi <= self.cap and self.epsilon(hi) <= self.eps:
                    lo, hi = hi, hi * 2
                hi = min(hi, self.cap + 1)
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = (mid, hi) if self.epsilon(mid) <= self.eps else (lo, mid)
                self.limit = lo
        return self.limit

    def allow(self) -> bool:
        """Consulted before each query: would one more release stay within the budget?"""
        return self.queries + 1 <= self.max_queries()

    def spend(self, failed: bool) -> None:
        if not self.allow():
            raise RuntimeError("budget exhausted: the accountant must be consulted before each query")
        self.queries += 1
        self.failures += int(failed)

    def state(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("eps", "eps0"):
            d[k] = "inf" if math.isinf(d[k]) else d[k]
        return d

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> Accountant:
        d = dict(d)
        for k in ("eps", "eps0"):
            d[k] = math.inf if d[k] == "inf" else float(d[k])
        return cls(**d)

    def same_budget(self, other: Accountant) -> bool:
        keys = ("eps", "delta", "eps0", "delta0", "rate", "method")
        return all(getattr(self, k) == getattr(other, k) for k in keys)

    def events(self):
        """The generation's privacy events as ppt.accounting data (for the stamp); None for eps = inf."""
        if not self.private:
            return None
        return SelfComposedEvent(query_event(self.eps0, self.rate), self.queries)
