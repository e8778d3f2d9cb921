"""Privacy as data: events that say what a release guarantees, accountants that compose them, and the
stamp's ``privacy`` block rendered from them.

Why: so that a stamp's headline holds only what is proven, while conditional bounds, papers' claims,
unprotected tokens and audits' lower bounds stay visibly apart (issue 16). Importing this package is cheap:
standard library only; ``dp_accounting`` (and numpy with it) is imported inside :func:`rdp_epsilon` and
:func:`pld_epsilon`.
"""

from __future__ import annotations

from ppt.accounting.compose import (
    AccountingError,
    Composition,
    Subtotal,
    amplify_pure_eps,
    compose,
    pld_epsilon,
    rdp_epsilon,
    to_dp_event,
)
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
    event_from_dict,
)
from ppt.accounting.render import render

__all__ = [
    "AccountingError",
    "ClaimedEvent",
    "ComposedEvent",
    "Composition",
    "ConditionalDpEvent",
    "EmpiricalBoundEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "MetricDpEvent",
    "PoissonSampledEvent",
    "PrivacyEvent",
    "PureDpEvent",
    "SelfComposedEvent",
    "Subtotal",
    "UnprotectedEvent",
    "amplify_pure_eps",
    "compose",
    "event_from_dict",
    "pld_epsilon",
    "rdp_epsilon",
    "render",
    "to_dp_event",
]
