"""Render a stamp's ``privacy`` block from events: proven figures in the headline, everything else labelled.

Why: a reader of a record (or a user forwarding it) looks at one number. That number must be a proven
bound; a paper's claim, a bound that holds only given some event, an audit's lower bound and the tokens that
went through verbatim are useful too, but must not be mistakable for it. So the block has one ``proven``
headline and, only when present, separately named sections whose figures carry different key names
(``eps_given``, ``claimed_eps``, ``eps_lower``), never the headline's ``eps``::

    {"proven": {"notion": "eps-LDP", "eps_per_token": 3.0, "tokens": 12, "eps": "inf", "delta": 0.0},
     "unprotected": {"kept non-sensitive word": 3},
     "conditional": [{"given": "...", "eps_per_token_given": 6.0, "eps_given": 72.0, "tokens": 12}],
     "claimed": [{"source": "...", "claimed_eps_per_token": 6.0, "claimed_eps": 72.0, "tokens": 12}],
     "empirical": [{"eps_lower": 8.5, "method": "...", "confidence": 0.999999, "n": 20000}]}

``proven.eps`` is ``"inf"`` as soon as one token is unprotected, and ``null`` when nothing is proven (or a
metric bound has no known worst case; its per-unit figures are then under ``proven.metric``).
``eps_per_token`` and ``tokens`` describe the protected token releases only. Proven figures are rounded
up and lower bounds down (6 significant digits), so rounding never makes a bound look better than it is.
The block is compact on purpose: records carry it, so absent sections are left out.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from ppt.accounting.compose import AccountingError, compose, pld_epsilon, rdp_epsilon
from ppt.accounting.events import (
    ClaimedEvent,
    ComposedEvent,
    ConditionalDpEvent,
    EmpiricalBoundEvent,
    GaussianEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    SelfComposedEvent,
    UnprotectedEvent,
    encode_float,
    iter_leaves,
)

__all__ = ["render", "ACCOUNTANTS"]

ACCOUNTANTS = ("basic", "rdp", "pld")
_DIGITS = 6


def _round(x: float | None, direction: str) -> float | str | None:
    """Round to 6 significant digits towards ``direction`` ("up", "down" or "near"), JSON-encoded."""
    if x is None:
        return None
    if x == 0 or not math.isfinite(x):
        return encode_float(x)
    scale = 10.0 ** (_DIGITS - math.ceil(math.log10(abs(x))))
    y = x * scale
    r = math.ceil(y) if direction == "up" else math.floor(y) if direction == "down" else round(y)
    out = r / scale
    # guard against the division landing on the wrong side of x
    if direction == "up" and out < x:
        out = math.nextafter(out, math.inf)
    elif direction == "down" and out > x:
        out = math.nextafter(out, -math.inf)
    return encode_float(out)


def _is_gaussian_like(event: PrivacyEvent) -> bool:
    if isinstance(event, GaussianEvent):
        return True
    if isinstance(event, PoissonSampledEvent):
        return any(_is_gaussian_like(x) for x, _ in iter_leaves(event.event))
    return False


def render(
    events: PrivacyEvent | Iterable[PrivacyEvent],
    *,
    accountant: str = "basic",
    delta: float | None = None,
) -> dict[str, Any]:
    """The stamp's ``privacy`` block for ``events`` (see the module docstring for its shape).

    ``accountant="basic"`` composes by hand (pure eps, delta 0). ``"rdp"`` / ``"pld"`` compose the proven
    events through dp_accounting at ``delta`` (required); Gaussian events need one of these.
    """
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    if accountant != "basic" and delta is None:
        raise ValueError(f"the {accountant!r} accountant needs a delta")
    root = events if isinstance(events, PrivacyEvent) else ComposedEvent(tuple(events))

    leaves = list(iter_leaves(root))
    proven = [
        SelfComposedEvent(e, n)
        for e, n in leaves
        if not isinstance(e, (ConditionalDpEvent, ClaimedEvent, EmpiricalBoundEvent, UnprotectedEvent))
    ]
    gaussian = any(_is_gaussian_like(e) for e, _ in leaves)
    if gaussian and accountant == "basic":
        raise AccountingError("Gaussian events need accountant='rdp' or 'pld' with a delta")
    others = [SelfComposedEvent(e, n) for e, n in leaves if not _is_gaussian_like(e)]
    c = compose(others)

    head: dict[str, Any] = {}
    has_pure = c.pure_tokens > 0 or gaussian
    if accountant != "basic":
        head["notion"] = "(eps,delta)-DP"
    elif c.metric and has_pure:
        head["notion"] = "eps-LDP+metric-LDP"
    elif c.metric:
        head["notion"] = "metric-LDP"
    elif has_pure:
        head["notion"] = "eps-LDP"
    else:
        head["notion"] = "none"
    if not gaussian and c.tokens:
        head["eps_per_token"] = _round(c.eps_per_token, "up")
    if c.metric:
        head["metric"] = {
            unit: {"eps_per_unit": _round(s.eps_per_token, "up"), "eps": _round(s.eps, "up")}
            for unit, s in sorted(c.metric.items())
        }
    head["tokens"] = c.tokens if not gaussian else None
    if head["tokens"] is None:
        del head["tokens"]

    if c.unprotected:
        eps: float | None = math.inf
    elif not proven:
        eps = None
    elif accountant == "basic":
        eps = c.eps
    else:
        fn = rdp_epsilon if accountant == "rdp" else pld_epsilon
        eps = fn(proven, float(delta))  # type: ignore[arg-type]
    head["eps"] = _round(eps, "up")
    head["delta"] = 0.0 if accountant == "basic" else float(delta)  # type: ignore[arg-type]
    if accountant != "basic":
        head["accountant"] = accountant

    out: dict[str, Any] = {"proven": head}
    if c.unprotected:
        out["unprotected"] = dict(sorted(c.unprotected.items()))
    if c.conditional:
        out["conditional"] = [
            {
                "given": cond,
                "eps_per_token_given": _round(s.eps_per_token, "up"),
                "eps_given": _round(s.eps, "up"),
                "tokens": s.tokens,
            }
            for cond, s in sorted(c.conditional.items())
        ]
    if c.claimed:
        out["claimed"] = [
            {
                "source": src,
                "claimed_eps_per_token": _round(s.eps_per_token, "near"),
                "claimed_eps": _round(s.eps, "near"),
                "tokens": s.tokens,
            }
            for src, s in sorted(c.claimed.items())
        ]
    if c.empirical:
        emp = []
        for e in sorted(c.empirical, key=lambda e: (e.method, -e.eps_lower)):
            item: dict[str, Any] = {
                "eps_lower": _round(e.eps_lower, "down"),
                "method": e.method,
                "confidence": e.confidence,
            }
            if e.n_samples is not None:
                item["n"] = e.n_samples
            emp.append(item)
        out["empirical"] = emp
    return out
