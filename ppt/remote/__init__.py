"""Talking to black-box LLMs: the OpenAI-compatible client and local backend behind `ppt query`, and
the loopback server behind `ppt serve`.

    from ppt.remote import HttpBackend, LocalQueryBackend, EndpointLM
    client.py     HttpBackend: concurrency, timeouts, retries with backoff
    auth.py       base URLs and the API key (from the environment only)
    wire.py       reading OpenAI-format responses, error bodies, Retry-After
    backends.py   request bodies <-> generation requests; LocalQueryBackend (a local causal LM)
    endpoint.py   EndpointLM: an OpenAI-compatible endpoint as a ppt.lm LanguageModel
    journal.py    the --resume journal
    server.py     `ppt serve`: OpenAI-compatible HTTP server, transport picked here (make_server)
    service.py    the Service contract;  batching.py  ModelService (dynamic batching);  logprobs.py
    api.py        routes, bearer auth, answering a POST;  shapes.py  OpenAI JSON bodies
    framing.py    what a request line and headers decide (framing, body size, auth, routes), for both transports
    limits.py     connection caps (total, per client address) and the request deadline, for every server
    http_uvicorn.py, http_starlette.py   preferred transport (`pip install 'ppt-private-prompts[serve]'`)
    http_stdlib.py                       fallback transport (http.server)

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
