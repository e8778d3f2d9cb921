"""Randomness policy.

Privacy noise must be unpredictable: by default every record gets a generator seeded from OS entropy.
With ``--seed S`` each record gets an independent generator derived from (S, record id) through
SHA-256, so a record's output depends only on its own id and text, never on batch size, order or
sharding. Mechanisms draw each record's random numbers from that record's generator in a fixed
order (per token, front to back) and then compute on whole batches.

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
import torch

SEED_WARNING = (
    "ppt: warning: --seed makes the noise reproducible; anyone who knows the seed and record ids can "
    "undo the privacy. Use seeded runs for research and reproducibility, not production.\n"
)


def _id_bytes(record_id: Any) -> bytes:
    return json.dumps(record_id, sort_keys=True, separators=(",", ":"), default=str).encode()


def derive_seed(seed: int, record_id: Any, stream: str = "") -> int:
    """A 63-bit seed for one record, independent across ids and named streams."""
    h = hashlib.sha256(b"ppt-rng\0" + str(int(seed)).encode() + b"\0" + _id_bytes(record_id) + b"\0" + stream.encode())
    return int.from_bytes(h.digest()[:8], "little") & ((1 << 63) - 1)


def entropy_seed() -> int:
    return secrets.randbits(63)


def record_generator(seed: int | None, record_id: Any, stream: str = "") -> torch.Generator:
    """A CPU torch generator for one record: derived from (seed, id) or from OS entropy if seed is None."""
    g = torch.Generator(device="cpu")
    g.manual_seed(entropy_seed() if seed is None else derive_seed(seed, record_id, stream))
    return g


def record_numpy_rng(seed: int | None, record_id: Any, stream: str = "") -> np.random.Generator:
    """The numpy counterpart of :func:`record_generator`."""
    return np.random.default_rng(entropy_seed() if seed is None else derive_seed(seed, record_id, stream))


def seeded(seed: int | None) -> bool:
    """What a stamp records about randomness: only *whether* the run was seeded (``seeded: true``).

    Never the seed itself, nor anything derived from it: with a record's id, the seed regenerates the
    record's noise (each RANTEXT word narrows to a handful of candidates), so it must not travel with
    the output (issue 16, finding 3)."""
    return seed is not None


def warn_if_seeded(seed: int | None, stream=None) -> None:
    if seed is not None:
        (stream or sys.stderr).write(SEED_WARNING)
