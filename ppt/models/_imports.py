"""Imports that leave transformers and torch out: presidio-analyzer and spaCy import both only when present,
and importing them is most of a short run's start-up (seconds) though neither the pattern recognizers nor
spaCy's CNN pipelines (en_core_web_sm/md) use them."""

from __future__ import annotations

import contextlib
import sys

OPTIONAL = ("transformers", "torch")  # imported by presidio's model-based recognizers and thinc only if present


@contextlib.contextmanager
def without_transformers_engine():
    """Inside the block, when neither transformers nor torch is loaded yet and presidio-analyzer is not imported
    either, both read as not installed (``sys.modules[name] = None``); they import normally afterwards.

    presidio imports ``transformers.pipeline`` and torch only inside ``try/except ImportError`` (they are
    optional there), and so does thinc (under spaCy); presidio-analyzer also registers a spaCy factory entry
    point, so every ``spacy.load`` imports presidio, and with it transformers and torch, unless it runs in
    here. Modules imported in the block keep their view (presidio without its transformers recognizers, thinc
    without its PyTorch shims), so code that needs them must not first be imported in here."""
    blocked = [name for name in OPTIONAL if name not in sys.modules]
    if "presidio_analyzer" in sys.modules or len(blocked) < len(OPTIONAL):
        yield
        return
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in blocked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
