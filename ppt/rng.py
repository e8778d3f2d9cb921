"""Randomness policy.

Privacy noise must be unpredictable: by default every record gets a generator seeded with 128 bits of
OS entropy. With ``--seed S`` each record gets an independent generator derived from (S, record id)
through SHA-256 (128 bits of the digest), so a record's output depends only on its own id and text,
never on batch size, order or sharding. Mechanisms draw each record's random numbers from that
record's generator in a fixed order (per token, front to back) and then compute on whole batches.

Why numpy generators (PCG64DXSM, 128-bit seeds) and not ``torch.Generator``: torch's CPU mt19937 keeps
only the low 32 bits of ``manual_seed``, so every record's noise came from one of 2^32 states (anyone
holding an output could search them all) and seeded runs repeated streams between records from ~2^16
records on (birthday bound). A numpy ``SeedSequence`` keeps every bit of a 128-bit seed. Importing
this module does not import torch (start-up time): torch generators are made only by the helpers
that LM sampling needs (:func:`record_torch_generator`, :func:`torch_generator`), which state their
32-bit limit.

Caveat (documented, not hidden): seeded runs are reproducible by anyone who knows the seed and the
ids, which voids the privacy guarantee against them. They are for research and tests.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
from typing import Any

import numpy as np

SEED_BITS = 128

SEED_WARNING = (
    "ppt: warning: --seed makes the noise reproducible; anyone who knows the seed and record ids can "
    "undo the privacy. Use seeded runs for research and reproducibility, not production.\n"
)


def _id_bytes(record_id: Any) -> bytes:
    if type(record_id) is int:  # the common case, the same bytes as json.dumps without its cost
        return str(record_id).encode()
    return json.dumps(record_id, sort_keys=True, separators=(",", ":"), default=str).encode()


def derive_seed(seed: int, record_id: Any, stream: str = "") -> int:
    """A 128-bit seed for one record, independent across ids and named streams (SHA-256, first 16 bytes)."""
    h = hashlib.sha256(b"ppt-rng\0" + str(int(seed)).encode() + b"\0" + _id_bytes(record_id) + b"\0" + stream.encode())
    return int.from_bytes(h.digest()[: SEED_BITS // 8], "little")


def entropy_seed() -> int:
    """128 bits of OS entropy."""
    return secrets.randbits(SEED_BITS)


def generator_from_seed(seed: int) -> np.random.Generator:
    """A PCG64DXSM generator whose state depends on every bit of ``seed`` (any non-negative int)."""
    return np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence(int(seed))))


def record_generator(seed: int | None, record_id: Any, stream: str = "") -> np.random.Generator:
    """The generator of one record: derived from (seed, id, stream), or from 128 bits of OS entropy if
    seed is None. Every sanitize mechanism draws its randomness from it."""
    return generator_from_seed(entropy_seed() if seed is None else derive_seed(seed, record_id, stream))


record_numpy_rng = record_generator  # the former name of the numpy generator (kept for callers)


def child_seed(g: np.random.Generator) -> int:
    """A 128-bit seed drawn from ``g`` (two 64-bit words): a sub-stream that may be drawn on another
    thread (e.g. RANTEXT's Laplace norms) while ``g`` stays the record's only source."""
    # two raw 64-bit outputs: what g.integers(0, 2**64, size=2, dtype=uint64) returns, without its overhead
    lo, hi = g.bit_generator.random_raw(2).tolist()
    return int(lo) | (int(hi) << 64)


def uniforms(g: Any, shape: int | tuple[int, ...]) -> np.ndarray:
    """float64 uniforms in [0, 1) of ``shape`` from ``g``: a numpy generator (:func:`record_generator`,
    what privacy noise uses), or a legacy CPU ``torch.Generator`` (tests, LM sampling). Lets code that
    computes with torch draw its noise from a 128-bit numpy stream."""
    if isinstance(g, np.random.Generator):
        return g.random(shape)
    import torch

    return torch.rand(shape, generator=g, dtype=torch.float64).numpy()


def record_torch_generator(seed: int | None, record_id: Any, stream: str = ""):
    """A CPU ``torch.Generator`` for one record, for code that hands a generator to torch (LM sampling in
    ppt.lm: extract, serve, prosan-lite). Limit, stated: torch's CPU mt19937 keeps only the low 32 bits of
    its seed, so such a stream is one of 2^32. Privacy noise never uses it: sanitize mechanisms, DP-OPT's
    votes, release and selection, and Split-N-Denoise's d_chi noise draw from :func:`record_generator`."""
    import torch

    g = torch.Generator(device="cpu")
    g.manual_seed((entropy_seed() if seed is None else derive_seed(seed, record_id, stream)) & ((1 << 63) - 1))
    return g


def torch_generator(g: np.random.Generator):
    """A CPU ``torch.Generator`` seeded by one draw from the numpy generator ``g``, for a mechanism that
    hands its record's randomness to torch LM sampling (ProSan-lite); the same 32-bit limit as
    :func:`record_torch_generator`."""
    import torch

    t = torch.Generator(device="cpu")
    t.manual_seed(child_seed(g) & ((1 << 63) - 1))
    return t


def seeded(seed: int | None) -> bool:
    """What a stamp records about randomness: only *whether* the run was seeded (``seeded: true``).

    Never the seed itself, nor anything derived from it: with a record's id, the seed regenerates the
    record's noise (each RANTEXT word narrows to a handful of candidates), so it must not travel with
    the output (issue 16, finding 3)."""
    return seed is not None


def warn_if_seeded(seed: int | None, stream=None) -> None:
    if seed is not None:
        (stream or sys.stderr).write(SEED_WARNING)
