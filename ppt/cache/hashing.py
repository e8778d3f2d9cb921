"""Keys and file hashes: an artifact's key hashes its kind and dependencies; files get a full sha256 and a
cheap fingerprint (first and last MiB plus 16 blocks over the middle)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

_HASH_CHUNK = 1 << 22
SMALL_FILE = 4 << 20  # files up to this size are fully hashed on every load
_FP_EDGE = 1 << 20  # fingerprint: first and last MiB ...
_FP_BLOCK = 1 << 16  # ... and this many bytes at each of _FP_SAMPLES offsets spread over the middle
_FP_SAMPLES = 16
FP_VERSION = 1


def canonical_json(obj: Any) -> bytes:
    """Deterministic JSON used for keys: sorted keys, no whitespace."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()


def artifact_key(kind: str, deps: dict[str, Any]) -> str:
    """Hash of the artifact kind and everything it depends on (first 20 hex chars of sha256)."""
    return hashlib.sha256(kind.encode() + b"\0" + canonical_json(deps)).hexdigest()[:20]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_HASH_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def fingerprint_file(path: Path, size: int | None = None) -> str:
    """A cheap content fingerprint: sha256 over the size, the first and last MiB and 16 blocks of 64 KiB
    spread evenly over the middle (about 3 MiB read whatever the file's size)."""
    size = os.stat(path).st_size if size is None else size
    h = hashlib.sha256(f"ppt-fp{FP_VERSION}:{size}:".encode())
    offsets = [0, max(0, size - _FP_EDGE)]
    span = size - 2 * _FP_EDGE
    if span > 0:
        offsets[1:1] = [_FP_EDGE + span * (i + 1) // (_FP_SAMPLES + 1) for i in range(_FP_SAMPLES)]
    with open(path, "rb") as f:
        for i, off in enumerate(offsets):
            f.seek(off)
            h.update(f.read(_FP_EDGE if i in (0, len(offsets) - 1) else _FP_BLOCK))
    return h.hexdigest()
