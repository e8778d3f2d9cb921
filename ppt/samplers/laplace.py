"""Norms of Laplace noise vectors, drawn from a record's own generator.

Why only norms: RANTEXT (and its calibration) use nothing but ||Y||_2 of a Laplace vector, and
|Laplace(0, b)| is b * Exp(1), so the signs are never drawn and numpy's fast exponential sampler does
the work in a sub-stream seeded by one 128-bit draw from the record's generator (so the norms may be
drawn on another thread while the record's generator stays the only source). No torch here: the
one-record CPU path must not import it.
"""

from __future__ import annotations

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


def _norms(n: int, b2: np.ndarray, rng: np.random.Generator, chunk: int) -> np.ndarray:
    out = np.empty(n, dtype=np.float64)
    for s in range(0, n, chunk):
        e = rng.standard_exponential((min(chunk, n - s), b2.size))
        out[s : s + e.shape[0]] = np.sqrt(np.einsum("ij,ij,j->i", e, e, b2))
    return out


__all__ = ["laplace_norms", "laplace_norms_seeded", "laplace_seed"]
