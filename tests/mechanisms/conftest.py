"""Both sampling backends under the statistical tests.

SanText(+), CusText(+) and RANTEXT sample with numpy on the CPU (no torch import) and with torch tensors
on a GPU: the same mechanism, so every ``@pytest.mark.statistical`` test of those modules runs once per
backend (``TokenMechanism.backend_override``), torch on CPU tensors here (on CUDA where a GPU is present).
"""

from __future__ import annotations

import pytest

from ppt.mechanisms.pipeline import TokenMechanism

BOTH_BACKENDS = ("test_santext", "test_custext", "test_rantext")


@pytest.fixture(autouse=True)
def sampler_backend(request, monkeypatch):
    backend = getattr(request, "param", None)
    if backend is not None:
        monkeypatch.setattr(TokenMechanism, "backend_override", backend)
    return backend


def pytest_generate_tests(metafunc):
    if (
        "sampler_backend" in metafunc.fixturenames
        and metafunc.definition.get_closest_marker("statistical")
        and metafunc.module.__name__.rsplit(".", 1)[-1] in BOTH_BACKENDS
    ):
        metafunc.parametrize("sampler_backend", ["numpy", "torch"], indirect=True)
