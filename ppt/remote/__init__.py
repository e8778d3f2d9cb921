"""Talking to black-box LLMs: the OpenAI-compatible client and local backend behind `ppt query`, and
the loopback server behind `ppt serve`.

    from ppt.remote import HttpBackend, LocalQueryBackend, QueryRunner, QuerySpec, EndpointLM
    client.py     HttpBackend: concurrency, timeouts, retries with backoff, key handling
    backends.py   request bodies <-> generation requests; LocalQueryBackend (a local causal LM)
    endpoint.py   EndpointLM: an OpenAI-compatible endpoint as a ppt.lm LanguageModel
    query.py      QuerySpec / QueryRunner: sanitize-stamp checks, templates, stamps, usage
    journal.py    the --resume journal
    server.py     `ppt serve`: OpenAI-compatible HTTP server with dynamic batching

Importing this package does not import torch or httpx; the submodules do what they need lazily.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "HttpBackend": "ppt.remote.client",
    "RetryPolicy": "ppt.remote.client",
    "LocalQueryBackend": "ppt.remote.backends",
    "Answer": "ppt.remote.backends",
    "parse_request": "ppt.remote.backends",
    "QueryRunner": "ppt.remote.query",
    "QuerySpec": "ppt.remote.query",
    "Journal": "ppt.remote.journal",
    "EndpointLM": "ppt.remote.endpoint",
    "ModelService": "ppt.remote.server",
    "start_server": "ppt.remote.server",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ppt.remote' has no attribute {name!r}")
