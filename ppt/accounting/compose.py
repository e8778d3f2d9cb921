"""Accountants: compose privacy events without ever mixing what is proven with what is not.

Why: composition is where honest accounting used to break. ``n * eps`` was written for tokens that were
kept verbatim (infinite loss), for a bound that holds only given RANTEXT's random adjacency list, and for a
paper's data-dependent figure. :func:`compose` does basic composition by hand and keeps every kind of
statement in its own total:

* proven pure eps (and metric eps through its known worst case) add; Laplace(b) counts as (1/b)-DP and a
  Poisson-subsampled pure-DP event as log(1 + q(e^eps - 1))-DP (add/remove-one amplification);
* metric eps also add per unit of their distance;
* conditional eps add within their condition and stay labelled with it;
* unprotected token counts add by reason, and a single one makes the proven total ``inf``;
* claimed figures add per source and never enter a proven total;
* empirical lower bounds are collected, never added (they bound loss from below).

For (eps, delta) accounting of subsampled and Gaussian events (DP-OPT), :func:`rdp_epsilon` and
:func:`pld_epsilon` lower events to Google's ``dp_accounting`` and use its RdpAccountant / PLDAccountant.
That library is imported lazily, inside those functions, so ``import ppt.accounting`` stays cheap.

Pure eps-DP events are lowered to binary randomized response with the same eps: every eps-DP mechanism is a
post-processing of it (Kairouz, Oh & Viswanath 2015), so its RDP curve / privacy-loss distribution is a
valid upper bound for any eps-DP release, whichever neighbouring relation the eps was stated under.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ppt.accounting.events import (
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
    iter_leaves,
)

__all__ = [
    "AccountingError",
    "Composition",
    "Subtotal",
    "compose",
    "amplify_pure_eps",
    "to_dp_event",
    "rdp_epsilon",
    "pld_epsilon",
]


class AccountingError(ValueError):
    """An event that the chosen accountant cannot account (the message says which and why)."""


@dataclass(frozen=True)
class Subtotal:
    """Basic composition within one label (a condition, a paper, a metric unit)."""

    eps: float
    eps_per_token: float
    tokens: int


@dataclass(frozen=True)
class Composition:
    """The result of basic composition, each kind of statement apart.

    ``eps`` is the proven worst-case total: pure eps plus metric worst-case eps; ``inf`` as soon as one token
    is unprotected; ``None`` when a metric event has no known worst case (the total per unit is then in
    ``metric``). ``eps_per_token`` is the largest proven per-token eps over the ``tokens`` protected token
    releases (unprotected tokens are not among them; they are in ``unprotected``).
    """

    eps: float | None
    eps_per_token: float | None
    tokens: int
    delta: float = 0.0
    pure_tokens: int = 0
    metric: dict[str, Subtotal] = field(default_factory=dict)
    conditional: dict[str, Subtotal] = field(default_factory=dict)
    claimed: dict[str, Subtotal] = field(default_factory=dict)
    unprotected: dict[str, int] = field(default_factory=dict)
    empirical: tuple[EmpiricalBoundEvent, ...] = ()

    @property
    def unprotected_count(self) -> int:
        return sum(self.unprotected.values())

    @property
    def bounded(self) -> bool:
        """True when the proven total is a finite, known number."""
        return self.eps is not None and math.isfinite(self.eps)


def amplify_pure_eps(eps: float, sampling_probability: float) -> float:
    """eps of an eps-DP mechanism run on a Poisson subsample of rate q: log(1 + q (e^eps - 1)).

    Tight for add/remove-one neighbours (Li, Qiao & Roth 2012; Balle, Barthe & Gaboardi 2018).
    """
    q = float(sampling_probability)
    if eps == math.inf:
        return math.inf if q > 0 else 0.0
    return math.log1p(q * math.expm1(eps))


def _add(table: dict[str, list[float]], key: str, eps: float, tokens: int) -> None:
    cur = table.setdefault(key, [0.0, 0.0, 0])
    cur[0] += eps * tokens
    cur[1] = max(cur[1], eps)
    cur[2] += tokens


def _freeze(table: dict[str, list[float]]) -> dict[str, Subtotal]:
    return {k: Subtotal(eps=v[0], eps_per_token=v[1], tokens=int(v[2])) for k, v in table.items()}


def _as_event(events: PrivacyEvent | Iterable[PrivacyEvent]) -> PrivacyEvent:
    if isinstance(events, PrivacyEvent):
        return events
    events = tuple(events)
    return events[0] if len(events) == 1 else ComposedEvent(events)


def _pure_eps_of(event: PrivacyEvent, where: str) -> float:
    """Basic-composition eps of an event that must be entirely proven pure DP (inside Poisson sampling)."""
    c = compose(event)
    if c.conditional or c.claimed or c.empirical:
        raise AccountingError(f"{where}: only proven events can be subsampled; got conditional/claimed/empirical ones")
    if c.unprotected:
        return math.inf
    if c.eps is None:
        raise AccountingError(f"{where}: a metric event without worst_case_eps has no pure-DP eps to amplify")
    return c.eps


def compose(events: PrivacyEvent | Iterable[PrivacyEvent]) -> Composition:
    """Basic (sequential) composition of ``events``, keeping proven, conditional, claimed, unprotected and
    empirical statements apart (see the module docstring for the rules).

    Raises :class:`AccountingError` for Gaussian events (no pure eps: use :func:`rdp_epsilon` /
    :func:`pld_epsilon` with a delta).
    """
    root = _as_event(events)
    pure_total = 0.0
    per_token = 0.0
    pure_tokens = 0
    tokens = 0
    worst_unknown = False
    metric: dict[str, list[float]] = {}
    conditional: dict[str, list[float]] = {}
    claimed: dict[str, list[float]] = {}
    unprotected: dict[str, int] = {}
    empirical: list[EmpiricalBoundEvent] = []

    for leaf, n in iter_leaves(root):
        if isinstance(leaf, (PureDpEvent, LaplaceEvent)):
            pure_total += leaf.eps * n
            per_token = max(per_token, leaf.eps) if n else per_token
            pure_tokens += n
            tokens += n
        elif isinstance(leaf, MetricDpEvent):
            _add(metric, leaf.unit, leaf.eps, n)
            tokens += n
            if leaf.worst_case_eps is None:
                worst_unknown = worst_unknown or n > 0
            else:
                pure_total += leaf.worst_case_eps * n
                per_token = max(per_token, leaf.worst_case_eps) if n else per_token
        elif isinstance(leaf, PoissonSampledEvent):
            inner = leaf.event
            if any(isinstance(x, GaussianEvent) for x, _ in iter_leaves(inner)):
                raise AccountingError(
                    "a Poisson-subsampled Gaussian event has no pure eps; use rdp_epsilon or pld_epsilon with a delta"
                )
            if leaf.sampling_probability == 0:
                continue
            eps = amplify_pure_eps(_pure_eps_of(inner, "PoissonSampledEvent"), leaf.sampling_probability)
            if eps == math.inf:
                # The subsample may release records verbatim: that is unprotected, not a finite eps.
                for reason, count in compose(inner).unprotected.items():
                    unprotected[reason] = unprotected.get(reason, 0) + count * n
                continue
            pure_total += eps * n
            per_token = max(per_token, eps) if n else per_token
            pure_tokens += n
            tokens += n
        elif isinstance(leaf, GaussianEvent):
            raise AccountingError(
                "a Gaussian event has no pure eps under basic composition; use rdp_epsilon or pld_epsilon with a delta"
            )
        elif isinstance(leaf, ConditionalDpEvent):
            _add(conditional, leaf.condition, leaf.eps, n)
        elif isinstance(leaf, ClaimedEvent):
            _add(claimed, leaf.source, leaf.eps, n)
        elif isinstance(leaf, UnprotectedEvent):
            if leaf.count * n:
                unprotected[leaf.reason] = unprotected.get(leaf.reason, 0) + leaf.count * n
        elif isinstance(leaf, EmpiricalBoundEvent):
            if leaf not in empirical:
                empirical.append(leaf)
        else:  # pragma: no cover - every leaf type is handled above
            raise AccountingError(f"unknown event type {type(leaf).__name__}")

    eps: float | None
    if unprotected:
        eps = math.inf
    elif worst_unknown:
        eps = None
    else:
        eps = pure_total
    return Composition(
        eps=eps,
        eps_per_token=None if worst_unknown else (per_token if tokens else None),
        tokens=tokens,
        delta=0.0,
        pure_tokens=pure_tokens,
        metric=_freeze(metric),
        conditional=_freeze(conditional),
        claimed=_freeze(claimed),
        unprotected=unprotected,
        empirical=tuple(empirical),
    )


# --------------------------------------------------------------------------------------------------------
# dp_accounting (RDP / PLD). Lazy: dp_accounting imports numpy/scipy.

_RR = "pure"  # lowered to randomized response: the library wants REPLACE_ONE
_ADD_REMOVE = "add_remove"  # Poisson-subsampled Laplace/Gaussian: the library wants ADD_OR_REMOVE_ONE


def _lower(event: PrivacyEvent, mode: str, dpe: Any) -> Any:
    """Map one of our events to a ``dp_accounting.DpEvent`` under ``mode`` (see :func:`to_dp_event`)."""
    if isinstance(event, ComposedEvent):
        return dpe.ComposedDpEvent([_lower(e, mode, dpe) for e in event.events])
    if isinstance(event, SelfComposedEvent):
        if event.count == 0:
            return dpe.NoOpDpEvent()
        return dpe.SelfComposedDpEvent(_lower(event.event, mode, dpe), event.count)
    if isinstance(event, UnprotectedEvent):
        return dpe.NonPrivateDpEvent() if event.count else dpe.NoOpDpEvent()
    if isinstance(event, (ConditionalDpEvent, ClaimedEvent, EmpiricalBoundEvent)):
        what = {
            ConditionalDpEvent: "holds only conditionally (compose it by hand with compose(); it stays labelled)",
            ClaimedEvent: "is a claimed figure, not a proven one; it never enters an (eps, delta) total",
            EmpiricalBoundEvent: "is an empirical lower bound; it cannot bound privacy loss from above",
        }[type(event)]
        raise AccountingError(f"{type(event).__name__} {what}")
    if isinstance(event, MetricDpEvent):
        if event.worst_case_eps is None:
            raise AccountingError(
                f"MetricDpEvent (eps {event.eps} per {event.unit}) has no worst_case_eps; "
                "RDP/PLD need the equivalent pure eps over the vocabulary"
            )
        return _lower(PureDpEvent(event.worst_case_eps), mode, dpe)
    if isinstance(event, PureDpEvent):
        if event.eps == 0:
            return dpe.NoOpDpEvent()
        # Binary randomized response with P[truth] = e^eps / (1 + e^eps) dominates every eps-DP mechanism.
        return dpe.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + math.exp(event.eps)), num_buckets=2)
    if isinstance(event, LaplaceEvent):
        if mode == _RR:  # (1/b)-DP, upper-bounded by randomized response so it composes with pure events
            return _lower(PureDpEvent(event.eps), mode, dpe)
        return dpe.LaplaceDpEvent(event.noise_multiplier)
    if isinstance(event, GaussianEvent):
        if mode == _RR:
            raise AccountingError(
                "cannot compose Gaussian events with pure eps-DP events in one dp_accounting accountant; "
                "account them separately"
            )
        return dpe.GaussianDpEvent(event.noise_multiplier)
    if isinstance(event, PoissonSampledEvent):
        q = event.sampling_probability
        if q == 0:
            return dpe.NoOpDpEvent()
        if q == 1:
            return _lower(event.event, mode, dpe)
        inner = event.event
        if mode == _RR:  # amplify by hand, then lower the amplified pure eps
            eps = _pure_eps_of(inner, "PoissonSampledEvent")
            if eps == math.inf:
                return dpe.NonPrivateDpEvent()
            return _lower(PureDpEvent(amplify_pure_eps(eps, q)), mode, dpe)
        leaf = _single(inner)
        if isinstance(leaf, (GaussianEvent, LaplaceEvent)):
            return dpe.PoissonSampledDpEvent(q, _lower(leaf, mode, dpe))
        raise AccountingError(
            "PoissonSampledEvent: dp_accounting subsamples only a single Gaussian or Laplace event "
            f"(got {type(inner).__name__}); pure eps-DP events are amplified by hand"
        )
    raise AccountingError(f"unknown event type {type(event).__name__}")


def _single(event: PrivacyEvent) -> PrivacyEvent:
    """Unwrap one-element Composed / count-1 SelfComposed nodes."""
    while True:
        if isinstance(event, SelfComposedEvent) and event.count == 1:
            event = event.event
        elif isinstance(event, ComposedEvent) and len(event.events) == 1:
            event = event.events[0]
        else:
            return event


def _mode(event: PrivacyEvent) -> str:
    """REPLACE_ONE (randomized response) if any pure-DP leaf is present, else ADD_OR_REMOVE_ONE."""

    def pure_like(e: PrivacyEvent) -> bool:
        if isinstance(e, (PureDpEvent, MetricDpEvent)):
            return True
        if isinstance(e, PoissonSampledEvent):  # natively subsampled only if a single Gaussian / Laplace
            return not isinstance(_single(e.event), (GaussianEvent, LaplaceEvent))
        return False

    return _RR if any(pure_like(leaf) for leaf, _ in iter_leaves(event)) else _ADD_REMOVE


def to_dp_event(events: PrivacyEvent | Iterable[PrivacyEvent]) -> tuple[Any, str]:
    """Lower ``events`` to a ``dp_accounting`` DpEvent; returns ``(dp_event, neighboring_relation_name)``.

    Pure-DP trees (eps-LDP, metric with worst case, Laplace, subsampled pure DP) lower to randomized
    response under ``REPLACE_ONE``; otherwise Laplace / Gaussian / Poisson-subsampled Laplace or Gaussian
    lower natively under ``ADD_OR_REMOVE_ONE``. Unprotected tokens lower to ``NonPrivateDpEvent`` (eps
    ``inf``). Conditional, claimed and empirical events raise :class:`AccountingError`.
    """
    from dp_accounting import dp_event as dpe

    root = _as_event(events)
    mode = _mode(root)
    relation = "REPLACE_ONE" if mode == _RR else "ADD_OR_REMOVE_ONE"
    return _lower(root, mode, dpe), relation


def _check_delta(delta: float) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 <= float(delta) < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return float(delta)


def _account(accountant: Any, dp_ev: Any, name: str) -> None:
    from dp_accounting import privacy_accountant

    try:
        accountant.compose(dp_ev)
    except privacy_accountant.UnsupportedEventError as exc:
        raise AccountingError(f"{name} cannot account this event: {exc}") from exc


def rdp_epsilon(
    events: PrivacyEvent | Iterable[PrivacyEvent], delta: float, *, orders: Sequence[float] | None = None
) -> float:
    """(eps, delta)-DP of the composition of ``events`` via ``dp_accounting``'s RdpAccountant.

    Supports pure / metric (with worst case) / Laplace events, Gaussian and Poisson-subsampled Gaussian
    events, Poisson-subsampled pure DP (amplified by hand), and any Composed / SelfComposed nesting.
    Unprotected tokens give ``inf``. Raises :class:`AccountingError` otherwise.
    """
    delta = _check_delta(delta)
    from dp_accounting import privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    root = _as_event(events)
    dp_ev, relation = to_dp_event(root)
    accountant = rdp.RdpAccountant(
        orders=list(orders) if orders is not None else None,
        neighboring_relation=getattr(privacy_accountant.NeighboringRelation, relation),
    )
    _account(accountant, dp_ev, "RdpAccountant")
    eps = float(accountant.get_epsilon(delta))
    if relation == "REPLACE_ONE":
        # A pure-DP tree is also (basic eps, 0)-DP; RDP's conversion to (eps, delta) at finite orders can
        # exceed that by a little at large eps, so the smaller of the two valid bounds is reported.
        basic = compose(root).eps
        if basic is not None:
            eps = min(eps, basic)
    return eps


def pld_epsilon(
    events: PrivacyEvent | Iterable[PrivacyEvent],
    delta: float,
    *,
    value_discretization_interval: float = 1e-4,
) -> float:
    """(eps, delta)-DP of the composition of ``events`` via ``dp_accounting``'s PLDAccountant (tight up to
    discretization, pessimistic). Supports pure / metric (with worst case) / Laplace / Gaussian events and
    Poisson-subsampled Laplace, Gaussian or pure DP. Raises :class:`AccountingError` otherwise.
    """
    delta = _check_delta(delta)
    from dp_accounting import privacy_accountant
    from dp_accounting.pld import pld_privacy_accountant as pld

    dp_ev, relation = to_dp_event(events)
    if relation == "REPLACE_ONE":
        # dp_accounting's PLDAccountant (0.4-0.6 at least) drops the count of a SelfComposedDpEvent of
        # randomized response (it composes the RR PLD once): build that PLD with the library's public
        # constructors instead, self-composing each node by its count.
        from dp_accounting.pld import privacy_loss_distribution as pld_lib

        built = _rr_pld(dp_ev, pld_lib, value_discretization_interval)
        return math.inf if built is None else float(built.get_epsilon_for_delta(delta))
    accountant = pld.PLDAccountant(
        neighboring_relation=getattr(privacy_accountant.NeighboringRelation, relation),
        value_discretization_interval=value_discretization_interval,
    )
    _account(accountant, dp_ev, "PLDAccountant")
    return float(accountant.get_epsilon(delta))


def _rr_pld(dp_ev: Any, pld_lib: Any, interval: float) -> Any:
    """The PLD of a randomized-response tree (None when it holds a non-private event)."""
    from dp_accounting import dp_event as dpe

    if isinstance(dp_ev, dpe.NoOpDpEvent):
        return pld_lib.identity(value_discretization_interval=interval)
    if isinstance(dp_ev, dpe.NonPrivateDpEvent):
        return None
    if isinstance(dp_ev, dpe.RandomizedResponseDpEvent):
        return pld_lib.from_randomized_response(
            noise_parameter=dp_ev.noise_parameter,
            num_buckets=dp_ev.num_buckets,
            value_discretization_interval=interval,
        )
    if isinstance(dp_ev, dpe.SelfComposedDpEvent):
        inner = _rr_pld(dp_ev.event, pld_lib, interval)
        return None if inner is None else inner.self_compose(dp_ev.count)
    if isinstance(dp_ev, dpe.ComposedDpEvent):
        out = pld_lib.identity(value_discretization_interval=interval)
        for e in dp_ev.events:
            part = _rr_pld(e, pld_lib, interval)
            if part is None:
                return None
            out = out.compose(part)
        return out
    raise AccountingError(f"PLD: unsupported event in a pure-DP composition: {dp_ev}")  # pragma: no cover
