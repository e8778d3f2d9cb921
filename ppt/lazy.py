"""Lazy imports of heavy modules (torch): the module is imported on first attribute use, not at import.

Why: ``import torch`` costs ~1-1.5 s of a one-record ``ppt sanitize`` on a small CPU, and the numpy
paths (one-record runs, CPU sampling) never touch it. A module that uses torch only inside functions
binds ``torch = lazy_module("torch")`` instead of ``import torch``: nothing is imported (and ``torch``
stays out of ``sys.modules``) until a function actually reaches for ``torch.something``. Annotations
are strings (``from __future__ import annotations``), so they never trigger the import.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """A stand-in for a module that imports it on first attribute access."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._mod: ModuleType | None = None

    def _load(self) -> ModuleType:
        if self._mod is None:
            self._mod = importlib.import_module(self._name)
        return self._mod

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return getattr(self._load(), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{' (loaded)' if self._mod is not None else ''}>"


def lazy_module(name: str) -> LazyModule:
    return LazyModule(name)


__all__ = ["LazyModule", "lazy_module"]
