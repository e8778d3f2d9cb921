"""Data-independent structure for sample-and-aggregate: keyed-hash splits, disjoint subsets, and the
per-token Poisson participation of subsets.

Why a keyed hash of the record and not its position: with positional chunks, adding one record shifts
every later record into another chunk, so one record changes many subsets and the one-vote sensitivity
the accounting relies on is false. A record's subset must depend on that record alone. The key comes from
OS entropy (or, for research runs, from ``--seed``) so the assignment cannot be predicted from the data.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np


def make_key(seed: int | None) -> bytes:
    """32 bytes from OS entropy, or derived from ``seed`` (research runs only: reproducible, predictable)."""
    if seed is None:
        return os.urandom(32)
    return hashlib.blake2b(f"ppt-dpopt-key:{int(seed)}".encode(), digest_size=32).digest()


def record_hashes(key: bytes, texts: list[str], labels: list[str], salt: str) -> np.ndarray:
    """A 64-bit keyed hash per record (its text and label only; never its position), salted by purpose."""
    out = np.empty(len(texts), dtype=np.uint64)
    for i, (t, y) in enumerate(zip(texts, labels)):
        h = hashlib.blake2b(f"{salt}\x1f{y}\x1f{t}".encode(), key=key, digest_size=8).digest()
        out[i] = int.from_bytes(h, "little")
    return out


def uniform01(hashes: np.ndarray) -> np.ndarray:
    """Hashes mapped to [0, 1) (53 high bits)."""
    return (hashes >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def split(key: bytes, texts: list[str], labels: list[str], fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Indices of (generation, validation): a record goes to validation when its keyed hash says so.

    The two parts are disjoint and each record's side depends only on that record, so the generation and
    selection steps compose in parallel.
    """
    u = uniform01(record_hashes(key, texts, labels, "split"))
    val = u < fraction
    return np.flatnonzero(~val), np.flatnonzero(val)


def assign(key: bytes, texts: list[str], labels: list[str], n: int, shots: int, salt: str) -> list[list[int]]:
    """``n`` disjoint subsets of indices: subset = keyed hash mod n; each keeps its ``shots`` records of
    lowest hash rank. Adding or removing one record changes at most the one subset it hashes to.
    """
    h = record_hashes(key, texts, labels, f"subset:{salt}")
    which = (h % np.uint64(n)).astype(np.int64)
    rank = h // np.uint64(n)
    order = np.lexsort((rank, which))  # by subset, then rank
    out: list[list[int]] = [[] for _ in range(n)]
    for i in order.tolist():
        s = out[which[i]]
        if len(s) < shots:
            s.append(i)
    return out


def participation(n: int, rate: float, generator) -> torch.Tensor:  # noqa: F821
    """Which of the ``n`` subsets vote this query: each independently with probability ``rate`` (Poisson);
    ``generator`` a numpy generator (128-bit seeded) or a CPU ``torch.Generator``."""
    import torch

    from ppt.rng import uniforms

    if rate >= 1.0:
        return torch.ones(n, dtype=torch.bool)
    return torch.from_numpy(uniforms(generator, n) < rate)
