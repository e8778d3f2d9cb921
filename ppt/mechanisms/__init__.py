"""Token-level text mechanisms behind one interface (:mod:`ppt.mechanisms.base`).

    from ppt.mechanisms import get_mechanism
    mech = get_mechanism("rantext", eps=6.0).prepare()
    [out] = mech.sanitize_batch(["My name is Alice"], [ppt.rng.record_generator(None, 0)])

Layout: ``base`` (the Mechanism interface), ``policy`` (what happens to pieces outside a mechanism's
rule), ``accounting`` (what a record spent), ``pipeline`` (the shared token pipeline), ``alignment``
(which token replaced which), ``registry`` (built-ins and entry-point plug-ins); one module or package
per mechanism. Mechanism modules are imported lazily so that listing them does not load torch models.
"""

from __future__ import annotations

from ppt.mechanisms.accounting import Accounting
from ppt.mechanisms.base import Mechanism, Sanitized
from ppt.mechanisms.pipeline import TokenMechanism, TokenPipeline
from ppt.mechanisms.policy import Policy
from ppt.mechanisms.registry import MECHANISMS, available, get_mechanism, mechanism_class

__all__ = [
    "MECHANISMS",
    "Accounting",
    "Mechanism",
    "Policy",
    "Sanitized",
    "TokenMechanism",
    "TokenPipeline",
    "available",
    "get_mechanism",
    "mechanism_class",
]
