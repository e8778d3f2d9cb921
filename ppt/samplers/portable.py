"""Portable float kernels: the same bits on every IEEE-754 CPU (x86-64 at any SIMD level, ARM).

Why (issue 36): a library's exponential or logarithm (numpy's and torch's vectorised ones, libm's) is
not correctly rounded, and its last bits differ between SIMD levels and architectures (numpy's
``exp`` with AVX2/AVX-512 against its baseline loop, torch's SLEEF kernels against the scalar ones,
glibc's FMA and non-FMA builds), so a seeded draw decided by such a value can differ from one CPU to
the next. The kernels here use only IEEE-754 basic operations (+, *, rint, exact power-of-two
scaling, integer bit operations), each correctly rounded on every CPU, one numpy or torch call per
operation (no fused multiply-add can creep in), and tables computed with Python's :mod:`decimal`
(software, correctly rounded).

:func:`exp2_grid_np` is numpy only (the CPU samplers import no torch); :func:`exp2_grid_torch` is the
same operations on torch tensors (the torch samplers, CUDA included), with the same bits. :func:`ln`
and :func:`exp` are scalar forms for constants (Z(eps), target curves).
"""

from __future__ import annotations

import threading
from decimal import Context, Decimal
from typing import Any

import numpy as np

_CTX = Context(prec=40)
GRID_BITS = 20  # exponents are rounded to multiples of 2**-20 (in powers of two): relative error < 3.4e-7
_HALF = GRID_BITS // 2
_MASK = (1 << _HALF) - 1
LOG2E_GRID = float(
    _CTX.divide(Decimal(2**GRID_BITS), _CTX.ln(Decimal(2)))
)  # 2**20 / ln 2: e**x = 2**(x * this / 2**20)
# exponents below -1021 are clamped (the result stays a normal number: no subnormal, so no dependence on a
# flush-to-zero mode some library may have set) and then flushed to 0 unless the caller keeps them
_T_MIN = float(-1021 << GRID_BITS)
_T_MAX = float(1023 << GRID_BITS)


def _pow2_table(den: int) -> np.ndarray:
    """2**(j / den) for j < 2**10, correctly rounded (decimal)."""
    two = Decimal(2)
    return np.array([float(_CTX.power(two, _CTX.divide(Decimal(j), Decimal(den)))) for j in range(1 << _HALF)])


_HI = _pow2_table(1 << _HALF)  # 2**(i / 2**10), in [1, 2): exponent field 1023, so adding n << 52 scales by 2**n
_LO = _pow2_table(1 << GRID_BITS)  # 2**(j / 2**20)
_HI_BITS = _HI.view(np.int64)
_MAGIC = 1.5 * 2.0**52  # t + MAGIC holds rint(t) (ties to even) in its low mantissa bits, for |t| < 2**51
_MAGIC_SHIFTED = (int(np.float64(_MAGIC).view(np.int64)) >> GRID_BITS) << 52  # what it adds to the exponent bits
_HI_ADJ = np.array([(int(b) - _MAGIC_SHIFTED + 2**63) % 2**64 - 2**63 for b in _HI_BITS], dtype=np.int64)
WORK = 1 << 15  # entries per step of exp2_grid_np: its work arrays are reused, so no fresh pages are touched
_work = threading.local()


def ln(x: float) -> float:
    """The natural logarithm of a positive float, correctly rounded (decimal), the same on every machine."""
    return float(_CTX.ln(Decimal(float(x))))


def exp(x: float) -> float:
    """e**x for a float, correctly rounded (decimal), the same on every machine."""
    return float(_CTX.exp(Decimal(float(x))))


def _buffers(n: int) -> tuple[np.ndarray, ...]:
    """This thread's work arrays (int64, int64, int64, float64), at least ``n`` entries each."""
    bufs = getattr(_work, "bufs", None)
    if bufs is None or bufs[0].size < n:
        bufs = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n))
        _work.bufs = bufs
    return bufs


def exp2_grid_np(t: Any, out: np.ndarray | None = None, *, flush: bool = True) -> np.ndarray:
    """2**(rint(t) / 2**20) element-wise for float64 ``t`` <= 1023 * 2**20 (numpy), the same bits on every CPU.

    With t = x * :data:`LOG2E_GRID` this is e**x with its exponent rounded to a multiple of 2**-20 (in powers
    of two): relative error < 3.4e-7 (plus 2 ulp), deterministic. For q = rint(t) (the MAGIC addition: exact,
    ties to even): 2**(q / 2**20) = 2**(q >> 20) * 2**(((q >> 10) & 1023) / 2**10) * 2**((q & 1023) / 2**20),
    two 1024-entry tables, the power of two added to the first entry's exponent field (exact), one rounded
    product. Results below 2**-1021 (t < -1021 * 2**20) are 0 with ``flush`` (the default), else a number
    below 2**-1020 (cheaper, for weights that a zero count multiplies anyway). ``out`` (float64, may be
    ``t`` itself) receives the result; the work runs in steps of :data:`WORK` entries on reused arrays.
    """
    t = np.asarray(t, dtype=np.float64)
    if out is None:
        out = np.empty(t.shape)
    src, dst = t.reshape(-1), out.reshape(-1)
    for s in range(0, src.size, WORK):
        e = min(s + WORK, src.size)
        hi, lo, hi_bits, lo_val = (b[: e - s] for b in _buffers(min(src.size, WORK)))
        f = dst[s:e]
        low = src[s:e] < _T_MIN if flush else None
        np.maximum(src[s:e], _T_MIN, out=f)  # -inf -> T_MIN (t <= T_MAX is the caller's)
        f += _MAGIC  # bits(MAGIC) + q: q's low bits are f's
        bits = f.view(np.int64)
        np.bitwise_and(bits, _MASK, out=lo)
        np.right_shift(bits, _HALF, out=hi)
        hi &= _MASK
        bits >>= GRID_BITS
        bits <<= 52  # 2**(q >> 20) as exponent bits, plus a constant the table entries cancel
        bits += np.take(_HI_ADJ, hi, out=hi_bits, mode="clip")  # clip: an unbuffered take (indices are in range)
        f *= np.take(_LO, lo, out=lo_val, mode="clip")
        if low is not None and low.any():
            f[low] = 0.0
    return out


def exp2_grid_torch(t, *, flush: bool = True):
    """:func:`exp2_grid_np` for a torch tensor (float64 result on its device): the same operations, the same bits."""
    import torch

    t = t.to(torch.float64)
    low = t < _T_MIN if flush else None
    q = torch.round(t.clamp(_T_MIN, _T_MAX)).to(torch.int64)  # half to even, as the MAGIC addition
    dev = q.device
    hi = torch.from_numpy(_HI_BITS).to(dev)[(q >> _HALF) & _MASK] + ((q >> GRID_BITS) << 52)
    out = hi.view(torch.float64) * torch.from_numpy(_LO).to(dev)[q & _MASK]
    if low is not None:
        out = out.masked_fill(low, 0.0)
    return out


__all__ = ["GRID_BITS", "LOG2E_GRID", "exp", "exp2_grid_np", "exp2_grid_torch", "ln"]
