"""Device and dtype selection: ``auto`` uses CUDA when present; everything works on CPU."""

from __future__ import annotations

import glob
import os
import re
from typing import Any

_CUDA_RE = re.compile(r"^cuda(?::(\d+))?$")

_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "f32": "float32",
    "float": "float32",
    "float16": "float16",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float64": "float64",
    "fp64": "float64",
    "double": "float64",
}


GPU_NODES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")  # NVIDIA driver, AMD ROCm


def gpu_may_exist() -> bool:
    """Whether this machine may have a GPU torch could use, decided without importing torch: an NVIDIA
    driver (/proc/driver/nvidia, /dev/nvidia*) or ROCm (/dev/kfd). False means ``auto`` is the CPU."""
    return any(os.path.exists(p) for p in GPU_NODES) or bool(glob.glob("/dev/nvidia*"))


def device_name(device: Any = "auto") -> str:
    """:func:`resolve_device` as a string (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``), importing torch
    only when the answer may be a GPU: ``auto`` on a machine with no GPU driver, and ``cpu``, are
    answered without it (start-up time: the numpy CPU paths never load torch)."""
    text = "auto" if device is None else str(device).strip().lower()
    if text == "cpu" or (text in ("", "auto") and not gpu_may_exist()):
        return "cpu"
    return str(resolve_device(device))


def resolve_device(device: Any = "auto"):
    """``"auto"|"cpu"|"cuda"|"cuda:N"|"mps"`` (or a torch.device) -> torch.device.

    ``auto`` is ``cuda`` when torch sees a GPU, else ``cpu``. Asking for CUDA without one, or for a
    GPU index that does not exist, raises PptError.
    """
    import torch

    from ppt.io import ExitCode, PptError

    if isinstance(device, torch.device):
        device = str(device)
    text = "auto" if device is None else str(device).strip().lower()
    if text in ("", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if text == "cpu":
        return torch.device("cpu")
    m = _CUDA_RE.match(text)
    if m:
        if not torch.cuda.is_available():
            raise PptError(
                f"--device {text}: CUDA is not available (torch {torch.__version__}, "
                f"built with CUDA {torch.version.cuda or 'none'})",
                exit_code=ExitCode.CONFIG,
                hint="use --device cpu or --device auto",
            )
        if m.group(1) is not None:
            idx = int(m.group(1))
            n = torch.cuda.device_count()
            if idx >= n:
                raise PptError(
                    f"--device {text}: only {n} CUDA device(s) visible",
                    exit_code=ExitCode.CONFIG,
                    hint=f"use cuda:0..cuda:{n - 1}",
                )
            return torch.device("cuda", idx)
        return torch.device("cuda")
    if text == "mps":
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        raise PptError(
            "--device mps: Apple MPS is not available here",
            exit_code=ExitCode.CONFIG,
            hint="use --device cpu or --device auto",
        )
    raise PptError(f"unknown device {device!r}", exit_code=ExitCode.USAGE, hint="use auto, cpu, cuda or cuda:N")


def resolve_dtype(dtype: Any = None, device=None):
    """``None|"auto"|"float32"|"fp16"|"bf16"|torch.dtype`` -> torch.dtype or None (None = model default).

    ``auto`` picks bfloat16 on a CUDA device that supports it, float16 on other CUDA devices, and
    float32 on CPU.
    """
    import torch

    from ppt.io import ExitCode, PptError

    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    text = str(dtype).strip().lower().removeprefix("torch.")
    if text == "auto":
        if device is not None and torch.device(device).type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if text in _DTYPES:
        return getattr(torch, _DTYPES[text])
    raise PptError(f"unknown dtype {dtype!r}", exit_code=ExitCode.USAGE, hint="use auto, float32, float16 or bfloat16")


def describe_devices() -> dict:
    """CUDA availability and device names (for `ppt env`)."""
    import torch

    info: dict[str, Any] = {
        "cuda_available": torch.cuda.is_available(),
        "cuda_version": torch.version.cuda,
        "devices": [],
        "default": "cuda" if torch.cuda.is_available() else "cpu",
    }
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            info["devices"].append({"index": i, "name": props.name, "memory_gib": round(props.total_memory / 2**30, 1)})
    return info
