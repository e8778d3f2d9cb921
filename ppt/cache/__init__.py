"""Content-addressed artifact cache.

Modules: ``paths`` (root, errors, sizes), ``hashing`` (keys, sha256, fingerprints), ``manifest`` (MANIFEST.json
and the load checks), ``locks`` (per-key build locks), ``listing`` (``ppt cache ls`` states), ``store`` (Cache).

Every artifact (an embedding space, a sorted distance table, a probability table, a dequantized model)
lives in its own directory ``$PPT_CACHE/<kind>/<key>/`` where ``key`` hashes everything the artifact
depends on. Why a directory per artifact: it is built in a temporary sibling ``.<key>.XXXX`` and renamed
into place, so readers see either nothing or a complete artifact; a ``MANIFEST.json`` written last
records the sha256, size, modification time and a cheap fingerprint of each file.

Checks, from cheap to thorough:

- every load checks each file's size (a truncated file is always caught) and, for files up to 4 MiB, its
  full sha256; a big file must also have the mtime recorded in the manifest and the same *fingerprint*
  (a hash of its first and last MiB and of 16 blocks spread over the middle). A big file whose mtime
  differs (rewritten in place, copied without ``cp -a``) or whose manifest predates fingerprints is
  re-hashed in full, and the result recorded in the manifest when the cache is writable;
- the full sha256 of every file is taken when the artifact is built (read back from disk after the
  build, before the manifest is written) and by ``ppt cache verify``; ``PPT_CACHE_VERIFY=full`` makes
  every load do it too. Damage that keeps size and mtime and misses the sampled blocks (bit rot) is
  what ``ppt cache verify`` is for.

A hit takes no lock and writes nothing, so a prebuilt cache works mounted read-only. A miss takes a
file lock per key, so concurrent builders wait for each other instead of racing; under that lock the
build directories left by killed builds of the same key are removed. ``ppt cache`` lists and removes
stale build directories (no live lock holder) and artifacts whose manifest is missing or unreadable.
"""

from __future__ import annotations

from ppt.cache.hashing import (
    FP_VERSION,
    SMALL_FILE,
    artifact_key,
    canonical_json,
    fingerprint_file,
    sha256_file,
)
from ppt.cache.listing import OBSOLETE_KINDS, Entry, scan
from ppt.cache.locks import STALE_ROOT_BUILD_S
from ppt.cache.manifest import (
    MANIFEST,
    Artifact,
    CorruptArtifact,
    read_manifest,
    record_verified,
    verify,
    write_manifest,
)
from ppt.cache.paths import cache_dir, dir_size
from ppt.cache.store import Cache

__all__ = [
    "FP_VERSION",
    "MANIFEST",
    "OBSOLETE_KINDS",
    "SMALL_FILE",
    "STALE_ROOT_BUILD_S",
    "Artifact",
    "Cache",
    "CorruptArtifact",
    "Entry",
    "artifact_key",
    "cache_dir",
    "canonical_json",
    "dir_size",
    "fingerprint_file",
    "read_manifest",
    "record_verified",
    "scan",
    "sha256_file",
    "verify",
    "write_manifest",
]
