"""Server tests run on both transports of `ppt serve`: ``starlette`` (uvicorn, the ``serve`` extra;
skipped when not installed) and ``stdlib`` (http.server, the fallback), so every behaviour is proven
on each."""

from __future__ import annotations

import sys

import pytest

from ppt.remote.server import starlette_available
from tests.helpers import PPT

TRANSPORTS = ["starlette", "stdlib"]
STARTUP = {"starlette": "uvicorn+starlette", "stdlib": "stdlib http.server"}
# `ppt serve` as a process with uvicorn unimportable, as when the serve extra is not installed
_NO_UVICORN = "import sys; sys.modules['uvicorn'] = None; from ppt.cli.main import run; sys.argv[0] = 'ppt'; run()"


@pytest.fixture(scope="module", params=TRANSPORTS)
def transport(request) -> str:
    if request.param == "starlette" and not starlette_available():
        pytest.skip("uvicorn/starlette not installed (pip install 'ppt-private-prompts[serve]')")
    return request.param


def ppt_serve_command(transport: str) -> list[str]:
    """How to start `ppt serve` so that it picks ``transport``."""
    return list(PPT) if transport == "starlette" else [sys.executable, "-c", _NO_UVICORN]
