"""d_chi (metric-LDP) noise for embedding vectors: one Gamma(d, 1/eta) radius per vector times a uniform
direction, then a projection onto the ball of radius C.

Why this shape: the density of z = r * v with r ~ Gamma(d, scale 1/eta) and v uniform on the unit
sphere of R^d is proportional to exp(-eta * ||z||_2), so releasing x + z is eta * d_chi private
(Pr[y | x] / Pr[y | x'] <= exp(eta * ||x - x'||_2)). Drawing Laplace noise per coordinate (the
Split-N-Denoise authors' code) has density exp(-eta * ||z||_1) instead, a different and, per unit of L2
distance, much weaker mechanism. Clipping is post-processing, so it keeps the guarantee.

Each record's noise comes from that record's own numpy generator (``ppt.rng.record_generator``, PCG64DXSM
with a 128-bit seed): one 128-bit draw (:func:`dchi_seed`) seeds two numpy PCG64 streams, one for the radii
and one for the directions. Floating point, as for Laplace noise (Mironov 2012): a float32 sum x + fl(z) is a
multiple of ulp(x) wherever |x + z| << |x|, so its low bits tell inputs apart. :func:`privatize` therefore adds
in float64 and snaps the clipped output to a grid of step ``snap_step(C, dtype)``, the output dtype's ulp at the
clip radius, coarser than every ulp of that dtype inside the ball: the release is then a function of the real
sum x + z (up to float64 rounding at a grid midpoint), not of x's low bits, and converts to the dtype exactly. Rows are drawn front to back in each stream, so a record's first n
rows are the same whatever the padded length: its noise never depends on its batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch


def dchi_seed(g) -> int:
    """The one draw a record's noise takes from its generator: 128 bits from a numpy generator
    (``ppt.rng.record_generator``), 63 from a torch one (whose own state has 32 bits of seed)."""
    if isinstance(g, np.random.Generator):
        from ppt.rng import child_seed

        return child_seed(g)
    return int(torch.randint(0, 2**63 - 1, (1,), generator=g, dtype=torch.int64))


def dchi_noise_seeded(n: int, d: int, eta: float, seed: int) -> np.ndarray:
    """``[n, d]`` float64 d_chi noise vectors from the stream ``seed`` (eta = inf: zeros)."""
    if math.isinf(eta):
        return np.zeros((n, d))
    radii, directions = (np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(2))
    r = radii.standard_gamma(d, size=n) / eta
    v = directions.standard_normal((n, d))
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v * (r[:, None] / np.maximum(norms, np.finfo(np.float64).tiny))


def check_eta(eta: float) -> float:
    eta = float(eta)
    if not (eta > 0) or math.isnan(eta):
        raise ValueError(f"eta must be > 0 (inf for no noise), got {eta}")
    return eta


def dchi_noise(
    shape: tuple[int, int, int],
    eta: float,
    generators: Sequence[torch.Generator],
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Noise ``[batch, tokens, d]`` on ``device``: record b's rows from ``generators[b]``.

    Every record draws the same ``tokens`` rows whatever the padding: callers pass the padded shape and
    ignore the padded rows, so a record's noise on its real tokens depends on its length only through
    the row index (rows are drawn front to back)."""
    b, t, d = shape
    eta = check_eta(eta)
    if len(generators) != b:
        raise ValueError(f"{len(generators)} generators for a batch of {b}")
    out = np.stack([dchi_noise_seeded(t, d, eta, dchi_seed(g)) for g in generators]) if b else np.zeros((0, t, d))
    return torch.from_numpy(out).to(device=device, dtype=dtype)


def clip_norms(x: torch.Tensor, bound: float) -> torch.Tensor:
    """Project each row (last dimension) onto the L2 ball of radius ``bound``."""
    norms = x.norm(dim=-1, keepdim=True)
    scale = torch.clamp(bound / norms.clamp_min(torch.finfo(x.dtype).tiny), max=1.0)
    return x * scale


def snap_step(bound: float, dtype: torch.dtype = torch.float32) -> float:
    """The release grid: ``dtype``'s ulp at the clip radius (a power of two), the coarsest ulp inside the ball."""
    return 2.0 ** math.ceil(math.log2(bound)) * torch.finfo(dtype).eps


def privatize(
    x: torch.Tensor, eta: float, generators: Sequence[torch.Generator], bound: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x~, z)`` for token embeddings ``x [batch, tokens, d]``: x~ = snap(clip_C(x + noise)), z = x~ - x.

    The sum and the clip are float64, then snapped to :func:`snap_step` (module docstring: no low-bit channel);
    a snapped row's norm may exceed C by at most half a step per coordinate. eta = inf adds no noise (and skips
    the clip: the clean embeddings are released unchanged)."""
    eta = check_eta(eta)
    if math.isinf(eta):
        return x, torch.zeros_like(x)
    wide = torch.float64 if x.device.type != "mps" else torch.float32  # MPS has no float64
    noise = dchi_noise(tuple(x.shape), eta, generators, device=x.device, dtype=wide)
    step = snap_step(bound, x.dtype)
    noisy = (torch.round(clip_norms(x.to(wide) + noise, bound) / step) * step).to(x.dtype)
    return noisy, noisy - x


__all__ = ["check_eta", "clip_norms", "dchi_noise", "dchi_noise_seeded", "dchi_seed", "privatize", "snap_step"]
