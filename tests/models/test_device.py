"""ppt.models.device: device resolution."""

from __future__ import annotations

import pytest

from ppt.io import ExitCode, PptError


def test_resolve_device(monkeypatch):
    import torch

    from ppt.models import resolve_device, resolve_dtype

    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    for spec in ("cuda", "cuda:0", "CUDA:1"):
        with pytest.raises(PptError) as e:
            resolve_device(spec)
        assert "CUDA is not available" in e.value.message and e.value.exit_code == ExitCode.CONFIG
    with pytest.raises(PptError):
        resolve_device("tpu")
    assert resolve_dtype(None) is None
    assert resolve_dtype("bf16") is torch.bfloat16 and resolve_dtype("fp32") is torch.float32
    assert resolve_dtype("auto", "cpu") is torch.float32
    with pytest.raises(PptError):
        resolve_dtype("int3")
