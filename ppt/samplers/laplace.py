"""Norms of Laplace noise vectors, drawn from a record's own generator.

Why only norms: RANTEXT (and its calibration) use nothing but ||Y||_2 of a Laplace vector, and
|Laplace(0, b)| is b * Exp(1), so the signs are never drawn and numpy's fast exponential sampler does
the work in a stream seeded by one draw from the record's generator.
"""

from __future__ import annotations

import numpy as np
import torch


def laplace_norms(n: int, scale: torch.Tensor, g: torch.Generator, chunk: int = 8192) -> torch.Tensor:
    """||Y||_2 for n vectors Y with Y_d ~ Laplace(0, scale_d) independently ([n] float64, CPU).

    Only the norm is used and |Laplace(0, b)| is b * Exp(1), so the signs are never drawn. The
    exponentials come from numpy's ziggurat sampler (several times faster than torch's on CPU), in a
    PCG64 stream seeded by one 63-bit draw from ``g``: the record's generator stays the only source.
    """
    seed = laplace_seed(g)
    return torch.from_numpy(laplace_norms_seeded(n, scale.double().cpu().numpy() ** 2, seed, chunk))


def laplace_seed(g: torch.Generator) -> int:
    """The one draw :func:`laplace_norms` takes from the record's generator."""
    return int(torch.randint(0, 2**63 - 1, (1,), generator=g, dtype=torch.int64))


def laplace_norms_seeded(n: int, b2: np.ndarray, seed: int, chunk: int = 8192) -> np.ndarray:
    """The numpy part of :func:`laplace_norms`: n norms with squared scales ``b2`` from the stream ``seed``.

    It touches no torch generator and releases the GIL while drawing, so it may run on another thread.
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    out = np.empty(n, dtype=np.float64)
    for s in range(0, n, chunk):
        e = rng.standard_exponential((min(chunk, n - s), b2.size))
        out[s : s + e.shape[0]] = np.sqrt(np.einsum("ij,ij,j->i", e, e, b2))
    return out


__all__ = ["laplace_norms", "laplace_norms_seeded", "laplace_seed"]
