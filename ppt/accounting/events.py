"""Privacy events: what a mechanism can honestly say about one release, as immutable data.

Why: a stamp used to be a handful of numbers (``eps_per_token``, ``composed_eps``) computed by each mechanism
in its own way, and nothing kept a proven figure apart from a paper's claim, a bound that holds only given
some event, or tokens that were passed through verbatim. Here every such statement is a frozen event, in the
manner of Google's ``dp_accounting.DpEvent`` (same class and field names where that library has the
notion, so lowering to it is direct). Accountants (:mod:`ppt.accounting.compose`) compose events and the
renderer (:mod:`ppt.accounting.render`) writes the stamp from them, so what is proven, conditional,
claimed, unprotected or merely measured stays labelled from the mechanism to the record.

Every event has :meth:`PrivacyEvent.to_dict` (stable keys, JSON-ready, floats finite or the string
``"inf"``) and :func:`event_from_dict` / :meth:`PrivacyEvent.from_dict` which round-trip it.

This module imports only the standard library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Iterable, Mapping

__all__ = [
    "PrivacyEvent",
    "PureDpEvent",
    "MetricDpEvent",
    "ConditionalDpEvent",
    "UnprotectedEvent",
    "EmpiricalBoundEvent",
    "ClaimedEvent",
    "LaplaceEvent",
    "GaussianEvent",
    "PoissonSampledEvent",
    "ComposedEvent",
    "SelfComposedEvent",
    "event_from_dict",
    "EVENT_TYPES",
]

# Kinds say what sort of statement an event is; only "proven" ones may enter a proven total.
PROVEN = "proven"
CONDITIONAL = "conditional"
UNPROTECTED = "unprotected"
EMPIRICAL = "empirical"
CLAIMED = "claimed"
STRUCTURE = "structure"  # composition nodes: their kind is that of their leaves


def encode_float(x: float | None) -> float | str | None:
    """A JSON-safe float: finite floats as themselves, +inf as ``"inf"`` (NaN and -inf are errors)."""
    if x is None:
        return None
    x = float(x)
    if math.isnan(x) or x == -math.inf:
        raise ValueError(f"not an encodable privacy figure: {x!r}")
    return "inf" if x == math.inf else x


def decode_float(x: float | str | None) -> float | None:
    """Inverse of :func:`encode_float`."""
    if x is None:
        return None
    if x == "inf":
        return math.inf
    if isinstance(x, str):
        raise ValueError(f"not a privacy figure: {x!r}")
    return float(x)


def _check_eps(name: str, value: Any, *, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value) or value < 0 or (value == math.inf and not allow_inf):
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return value


def _check_text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _check_count(name: str, value: Any, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


class PrivacyEvent:
    """Base of all events. Subclasses are frozen dataclasses with a unique ``TYPE`` tag."""

    TYPE: ClassVar[str] = ""
    KIND: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """Stable, JSON-ready form: ``{"type": TYPE, <fields in declaration order>}``."""
        out: dict[str, Any] = {"type": self.TYPE}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, PrivacyEvent):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = [v.to_dict() for v in value]
            elif isinstance(value, float):
                value = encode_float(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PrivacyEvent:
        """Rebuild an event from :meth:`to_dict` output (on a subclass, the type must match)."""
        event = event_from_dict(data)
        if cls is not PrivacyEvent and not isinstance(event, cls):
            raise ValueError(f"expected a {cls.TYPE!r} event, got {data.get('type')!r}")
        return event


@dataclass(frozen=True)
class PureDpEvent(PrivacyEvent):
    """eps-LDP per token: for any two inputs x, x' and output y, P[y|x] <= e^eps P[y|x'] (proven)."""

    eps: float
    TYPE: ClassVar[str] = "pure"
    KIND: ClassVar[str] = PROVEN

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", _check_eps("eps", self.eps))


@dataclass(frozen=True)
class MetricDpEvent(PrivacyEvent):
    """Metric LDP: P[y|x] <= e^(eps * d(x, x')) P[y|x'], eps per ``unit`` of the stated distance d.

    ``worst_case_eps`` is the equivalent eps-LDP over the whole vocabulary (eps times the diameter under
    d) when known; it is what a pure-eps reader should compare, and what enters a worst-case total.
    """

    eps: float
    unit: str
    worst_case_eps: float | None = None
    TYPE: ClassVar[str] = "metric"
    KIND: ClassVar[str] = PROVEN

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", _check_eps("eps", self.eps))
        _check_text("unit", self.unit)
        if self.worst_case_eps is not None:
            object.__setattr__(self, "worst_case_eps", _check_eps("worst_case_eps", self.worst_case_eps))


@dataclass(frozen=True)
class ConditionalDpEvent(PrivacyEvent):
    """eps-LDP that holds only conditional on a stated event (e.g. RANTEXT "given the adjacency list C_r").

    Not a proven bound on the release: the conditioning event itself may depend on the input.
    """

    eps: float
    condition: str
    TYPE: ClassVar[str] = "conditional"
    KIND: ClassVar[str] = CONDITIONAL

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", _check_eps("eps", self.eps))
        _check_text("condition", self.condition)


@dataclass(frozen=True)
class UnprotectedEvent(PrivacyEvent):
    """``count`` tokens released verbatim (infinite privacy loss), outside any composed eps, and why."""

    count: int
    reason: str
    TYPE: ClassVar[str] = "unprotected"
    KIND: ClassVar[str] = UNPROTECTED

    def __post_init__(self) -> None:
        _check_count("count", self.count)
        _check_text("reason", self.reason)


@dataclass(frozen=True)
class EmpiricalBoundEvent(PrivacyEvent):
    """An audit's certified *lower* bound on the per-token privacy loss (it never bounds loss from above)."""

    eps_lower: float
    method: str
    confidence: float
    n_samples: int | None = None
    TYPE: ClassVar[str] = "empirical"
    KIND: ClassVar[str] = EMPIRICAL

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps_lower", _check_eps("eps_lower", self.eps_lower, allow_inf=True))
        _check_text("method", self.method)
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 < float(c) <= 1.0:
            raise ValueError(f"confidence must be in (0, 1], got {c!r}")
        object.__setattr__(self, "confidence", float(c))
        if self.n_samples is not None:
            _check_count("n_samples", self.n_samples, minimum=1)


@dataclass(frozen=True)
class ClaimedEvent(PrivacyEvent):
    """A figure a paper (``source``) claims, not proven here; never enters a proven total."""

    eps: float
    source: str
    TYPE: ClassVar[str] = "claimed"
    KIND: ClassVar[str] = CLAIMED

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", _check_eps("eps", self.eps, allow_inf=True))
        _check_text("source", self.source)


@dataclass(frozen=True)
class _NoiseEvent(PrivacyEvent):
    """A noise-adding release of a sensitivity-1 query, parametrised by its noise multiplier."""

    noise_multiplier: float

    def __post_init__(self) -> None:
        v = _check_eps("noise_multiplier", self.noise_multiplier)
        if v == 0:
            raise ValueError("noise_multiplier must be > 0 (a noiseless release is an UnprotectedEvent)")
        object.__setattr__(self, "noise_multiplier", v)


@dataclass(frozen=True)
class LaplaceEvent(_NoiseEvent):
    """Laplace noise of scale ``noise_multiplier`` on a sensitivity-1 query: (1/noise_multiplier)-DP.

    Mirrors ``dp_accounting.LaplaceDpEvent``.
    """

    noise_multiplier: float
    TYPE: ClassVar[str] = "laplace"
    KIND: ClassVar[str] = PROVEN

    @property
    def eps(self) -> float:
        return 1.0 / self.noise_multiplier


@dataclass(frozen=True)
class GaussianEvent(_NoiseEvent):
    """Gaussian noise of std ``noise_multiplier`` on an L2-sensitivity-1 query (RDP / (eps, delta) only).

    Mirrors ``dp_accounting.GaussianDpEvent``.
    """

    noise_multiplier: float
    TYPE: ClassVar[str] = "gaussian"
    KIND: ClassVar[str] = PROVEN


@dataclass(frozen=True)
class PoissonSampledEvent(PrivacyEvent):
    """``event`` run on a Poisson subsample (each record kept with ``sampling_probability``); add/remove-one.

    Mirrors ``dp_accounting.PoissonSampledDpEvent`` (DP-OPT's per-token subsampling).
    """

    sampling_probability: float
    event: PrivacyEvent
    TYPE: ClassVar[str] = "poisson_sampled"
    KIND: ClassVar[str] = STRUCTURE

    def __post_init__(self) -> None:
        q = self.sampling_probability
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0.0 <= float(q) <= 1.0:
            raise ValueError(f"sampling_probability must be in [0, 1], got {q!r}")
        object.__setattr__(self, "sampling_probability", float(q))
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError("event must be a PrivacyEvent")


@dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """Sequential composition of ``events`` (mirrors ``dp_accounting.ComposedDpEvent``)."""

    events: tuple[PrivacyEvent, ...] = field(default_factory=tuple)
    TYPE: ClassVar[str] = "composed"
    KIND: ClassVar[str] = STRUCTURE

    def __post_init__(self) -> None:
        events = tuple(self.events)
        for e in events:
            if not isinstance(e, PrivacyEvent):
                raise TypeError(f"events must be PrivacyEvents, got {type(e).__name__}")
        object.__setattr__(self, "events", events)


@dataclass(frozen=True)
class SelfComposedEvent(PrivacyEvent):
    """``event`` composed with itself ``count`` times (mirrors ``dp_accounting.SelfComposedDpEvent``)."""

    event: PrivacyEvent
    count: int
    TYPE: ClassVar[str] = "self_composed"
    KIND: ClassVar[str] = STRUCTURE

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError("event must be a PrivacyEvent")
        _check_count("count", self.count)


EVENT_TYPES: dict[str, type[PrivacyEvent]] = {
    cls.TYPE: cls
    for cls in (
        PureDpEvent,
        MetricDpEvent,
        ConditionalDpEvent,
        UnprotectedEvent,
        EmpiricalBoundEvent,
        ClaimedEvent,
        LaplaceEvent,
        GaussianEvent,
        PoissonSampledEvent,
        ComposedEvent,
        SelfComposedEvent,
    )
}


def event_from_dict(data: Mapping[str, Any]) -> PrivacyEvent:
    """Rebuild any event from its :meth:`PrivacyEvent.to_dict` form (unknown types and keys are errors)."""
    if not isinstance(data, Mapping):
        raise TypeError(f"an event dict is required, got {type(data).__name__}")
    tag = data.get("type")
    cls = EVENT_TYPES.get(tag)  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"unknown privacy event type {tag!r}")
    names = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
    extra = set(data) - set(names) - {"type"}
    if extra:
        raise ValueError(f"unknown keys for a {tag!r} event: {sorted(extra)}")
    kwargs: dict[str, Any] = {}
    for name in names:
        if name not in data:
            continue
        value = data[name]
        if name == "event":
            value = event_from_dict(value)
        elif name == "events":
            value = tuple(event_from_dict(v) for v in value)
        elif value == "inf" or (isinstance(value, float)):
            value = decode_float(value)
        kwargs[name] = value
    return cls(**kwargs)


def iter_leaves(event: PrivacyEvent, count: int = 1) -> Iterable[tuple[PrivacyEvent, int]]:
    """Yield ``(leaf, multiplicity)`` through Composed / SelfComposed nodes (PoissonSampled is a leaf)."""
    if isinstance(event, ComposedEvent):
        for e in event.events:
            yield from iter_leaves(e, count)
    elif isinstance(event, SelfComposedEvent):
        if event.count:
            yield from iter_leaves(event.event, count * event.count)
    else:
        yield event, count
