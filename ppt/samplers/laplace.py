"""Norms of Laplace noise vectors, drawn from a record's own generator.

Why only norms: RANTEXT (and its calibration) use nothing but ||Y||_2 of a Laplace vector, and
|Laplace(0, b)| is b * Exp(1), so the signs are never drawn and numpy's fast exponential sampler does
the work in a sub-stream seeded by one 128-bit draw from the record's generator (so the norms may be
drawn on another thread while the record's generator stays the only source). No torch here: the
one-record CPU path must not import it. The squared norm is summed exactly (terms rounded to a fixed
grid, :func:`grid_exponent`), so a radius is the same bits on every CPU (issue 36): the einsum it
replaces summed in whatever order the build's loops took.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppt.rng import child_seed, generator_from_seed


def laplace_norms(n: int, scale: Any, g: Any, chunk: int = 8192) -> Any:
    """||Y||_2 for n vectors Y with Y_d ~ Laplace(0, scale_d) independently ([n] float64).

    ``g`` is the record's numpy generator (the norms come back as a numpy array). A ``torch.Generator``
    is still accepted for the fixed-seed, public calibration and audit streams (legacy 63-bit draw,
    torch tensor back); no mechanism's noise uses that path.
    """
    if isinstance(g, np.random.Generator):
        return laplace_norms_seeded(n, np.asarray(scale, dtype=np.float64) ** 2, laplace_seed(g), chunk)
    import torch

    legacy = np.random.Generator(np.random.PCG64(laplace_seed(g)))  # unchanged: calibrated Z stays the same
    scale = np.asarray(scale.cpu() if hasattr(scale, "cpu") else scale, dtype=np.float64)
    return torch.from_numpy(_norms(n, scale**2, legacy, chunk))


def laplace_seed(g: Any) -> int:
    """The one draw :func:`laplace_norms` takes from the record's generator: 128 bits from a numpy
    generator (legacy: 63 bits from a torch generator)."""
    if isinstance(g, np.random.Generator):
        return child_seed(g)
    import torch

    return int(torch.randint(0, 2**63 - 1, (1,), generator=g, dtype=torch.int64))


def laplace_norms_seeded(n: int, b2: np.ndarray, seed: int, chunk: int = 8192) -> np.ndarray:
    """The numpy part of :func:`laplace_norms`: n norms with squared scales ``b2`` from the stream ``seed``
    (every bit of the seed counts: :func:`ppt.rng.generator_from_seed`).

    It touches no torch generator and releases the GIL while drawing, so it may run on another thread.
    """
    return _norms(n, b2, generator_from_seed(seed), chunk)


EXP_CAP = 64.0  # |Y_d| / scale_d = Exp(1) draws are capped here in the sum (numpy's sampler never exceeds ~45)


def grid_exponent(b2: np.ndarray) -> int:
    """S such that every term e**2 * b2_d * 2**S (e <= EXP_CAP) is at most 2**53 / d (a power of two), so the d
    terms rounded to integers sum below 2**53: exactly, in any order."""
    b2 = np.asarray(b2, dtype=np.float64)
    top = float(b2.max()) * EXP_CAP**2 if b2.size else 0.0
    if not top > 0:
        return 0
    budget = 53 - max(0, int(b2.size - 1).bit_length())  # per term 2**budget, d * 2**budget <= 2**53
    return budget - math.frexp(top)[1]  # top * 2**S < 2**budget


def _norms(n: int, b2: np.ndarray, rng: np.random.Generator, chunk: int) -> np.ndarray:
    """sqrt(sum_d e_d**2 b2_d) per row of Exp(1) draws e, the same bits on every CPU: each term is rounded to a
    multiple of 2**-S (:func:`grid_exponent`; ~1e-13 of the largest term's scale), so the sum is over integers
    below 2**53, exact whatever order numpy's reduction or a compiler's vector width gives it."""
    b2 = np.asarray(b2, dtype=np.float64)
    S = grid_exponent(b2)
    b2s = b2 * 2.0**S  # exact: a power of two
    cap = 2.0 ** (53 - max(0, int(b2.size - 1).bit_length()))
    out = np.empty(n, dtype=np.float64)
    for s in range(0, n, chunk):
        e = rng.standard_exponential((min(chunk, n - s), b2.size))
        np.multiply(e, e, out=e)
        e *= b2s
        np.minimum(e, cap, out=e)  # only a draw above EXP_CAP reaches it
        np.rint(e, out=e)
        total = e.sum(axis=1)  # integers, every partial sum <= 2**53: exact
        total *= 2.0**-S  # exact
        out[s : s + e.shape[0]] = np.sqrt(total)
    return out


__all__ = ["grid_exponent", "laplace_norms", "laplace_norms_seeded", "laplace_seed"]
