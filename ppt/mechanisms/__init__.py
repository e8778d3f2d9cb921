"""Token-level text mechanisms, one file each, behind one interface (:mod:`ppt.mechanisms.base`).

    from ppt.mechanisms import get_mechanism
    mech = get_mechanism("rantext", eps=6.0)
    [out] = mech.sanitize_batch(["My name is Alice"], [ppt.rng.record_generator(None, 0)])

Modules are imported lazily so that listing mechanisms does not load torch models.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from ppt.mechanisms.base import Accounting, Mechanism, Policy, Sanitized, TokenMechanism

# name -> (module, class)
MECHANISMS: dict[str, tuple[str, str]] = {
    "rantext": ("ppt.mechanisms.rantext", "Rantext"),
    "cape": ("ppt.mechanisms.cape", "Cape"),
    "santext": ("ppt.mechanisms.santext", "SanText"),
    "santext+": ("ppt.mechanisms.santext", "SanTextPlus"),
    "custext": ("ppt.mechanisms.custext", "CusText"),
    "custext+": ("ppt.mechanisms.custext", "CusTextPlus"),
    "tem": ("ppt.mechanisms.tem", "TEM"),
}


def mechanism_class(name: str) -> type[Mechanism]:
    key = name.lower()
    if key not in MECHANISMS:
        raise KeyError(f"unknown mechanism {name!r}; choose one of: {', '.join(MECHANISMS)}")
    module, cls = MECHANISMS[key]
    return getattr(importlib.import_module(module), cls)


def available() -> list[str]:
    """Mechanisms whose module exists in this install."""
    out = []
    for name, (module, _) in MECHANISMS.items():
        if importlib.util.find_spec(module) is not None:
            out.append(name)
    return out


def get_mechanism(name: str, eps: float, **params: Any) -> Mechanism:
    """Instantiate a mechanism; parameters are validated here, before any input is read."""
    return mechanism_class(name)(eps=eps, **params)


__all__ = ["MECHANISMS", "Accounting", "Mechanism", "Policy", "Sanitized", "TokenMechanism", "available", "get_mechanism", "mechanism_class"]
