"""Which mechanisms exist: the built-ins, and plug-ins found through the ``ppt.mechanisms`` entry points.

Why entry points: a mechanism from another package registers itself the way ``llm`` plug-ins do::

    [project.entry-points."ppt.mechanisms"]
    mymech = "mypkg.mech:MyMechanism"

The built-ins are listed once, here (not in pyproject.toml), so they work whatever the installed
metadata says; a plug-in that declares a built-in name is ignored. Nothing is imported until a mechanism is asked for, so listing them loads no model.
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import lru_cache
from importlib import metadata
from typing import Any

from ppt.mechanisms.base import Mechanism

ENTRY_POINT_GROUP = "ppt.mechanisms"

# name -> (module, class)
MECHANISMS: dict[str, tuple[str, str]] = {
    "rantext": ("ppt.mechanisms.rantext", "Rantext"),
    "cape": ("ppt.mechanisms.cape", "Cape"),
    "santext": ("ppt.mechanisms.santext", "SanText"),
    "santext+": ("ppt.mechanisms.santext", "SanTextPlus"),
    "custext": ("ppt.mechanisms.custext", "CusText"),
    "custext+": ("ppt.mechanisms.custext", "CusTextPlus"),
    "tem": ("ppt.mechanisms.tem", "TEM"),
    "prosan": ("ppt.mechanisms.prosan", "ProSan"),
    "prosan-lite": ("ppt.mechanisms.prosan.lite", "ProSanLite"),
    "placeholder": ("ppt.mechanisms.placeholder", "Placeholder"),
    "surrogate": ("ppt.mechanisms.surrogate", "Surrogate"),
}


@lru_cache(maxsize=1)
def plugins() -> dict[str, tuple[str, str]]:
    """Mechanisms other packages declare in the ``ppt.mechanisms`` entry-point group (built-in names excluded)."""
    out: dict[str, tuple[str, str]] = {}
    try:
        eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # noqa: BLE001 - unreadable metadata must not hide the built-ins
        return out
    for ep in eps:
        key = ep.name.lower()
        if key in MECHANISMS or key in out or ":" not in ep.value:
            continue
        module, _, attr = ep.value.partition(":")
        out[key] = (module.strip(), attr.strip())
    return out


def registered() -> dict[str, tuple[str, str]]:
    """Every known mechanism: the built-ins first, then plug-ins (name -> (module, class))."""
    return {**MECHANISMS, **plugins()}


def mechanism_class(name: str) -> type[Mechanism]:
    key = name.lower()
    table = registered()
    if key not in table:
        raise KeyError(f"unknown mechanism {name!r}; choose one of: {', '.join(table)}")
    module, cls = table[key]
    obj: Any = importlib.import_module(module)
    for part in cls.split("."):
        obj = getattr(obj, part)
    return obj


def available() -> list[str]:
    """Mechanisms whose module exists in this install."""
    out = []
    for name, (module, _) in registered().items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            out.append(name)
    return out


def get_mechanism(name: str, eps: float, **params: Any) -> Mechanism:
    """Instantiate a mechanism; parameters are validated here, before any input is read."""
    return mechanism_class(name)(eps=eps, **params)


__all__ = ["ENTRY_POINT_GROUP", "MECHANISMS", "available", "get_mechanism", "mechanism_class", "plugins", "registered"]
