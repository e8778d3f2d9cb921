"""ppt: keep private text out of prompts sent to black-box LLMs.

The Python API (``ppt.sanitize``, ``ppt.Sanitizer``: :mod:`ppt.api`) is imported on first use, so ``import ppt``
stays cheap for the CLI."""

from typing import Any

__version__ = "0.1.0"

_API = ("Sanitizer", "sanitize")


def __getattr__(name: str) -> Any:
    if name in _API:
        from ppt import api

        return getattr(api, name)
    raise AttributeError(f"module 'ppt' has no attribute {name!r}")


__all__ = ["Sanitizer", "__version__", "sanitize"]
