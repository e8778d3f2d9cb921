"""An artifact's MANIFEST.json (written last: files, sizes, mtimes, sha256, fingerprints), its shape check
and the load checks from cheap (size, fingerprint) to thorough (full sha256)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppt.cache import hashing
from ppt.cache.hashing import SMALL_FILE

MANIFEST = "MANIFEST.json"


def _file_record(p: Path, sha256: str | None = None) -> dict[str, Any]:
    st = p.stat()
    return {
        "sha256": sha256 or hashing.sha256_file(p),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "fp": hashing.fingerprint_file(p, st.st_size),
    }


class CorruptArtifact(Exception):
    """An artifact whose files do not match its manifest, or whose manifest is missing or malformed."""


@dataclass(frozen=True)
class Artifact:
    """A complete, verified artifact directory."""

    kind: str
    key: str
    path: Path
    manifest: dict[str, Any]

    @property
    def content_hash(self) -> str:
        """A short hash over the files' hashes: what stamps cite to identify the artifact's content."""
        files = self.manifest["files"]
        blob = hashing.canonical_json({k: v["sha256"] for k, v in sorted(files.items())})
        return hashlib.sha256(blob).hexdigest()[:16]

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def meta(self) -> dict[str, Any]:
        return self.manifest.get("meta", {})


def _write_json_atomic(path: Path, obj: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(obj, indent=1, sort_keys=True).encode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_manifest(directory: Path, kind: str, deps: dict[str, Any], meta: dict[str, Any] | None = None) -> dict:
    """Hash every file of a freshly built artifact directory (read back from disk: the full sha256 check
    after a build) and write its manifest (last)."""
    files = {}
    for p in sorted(directory.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            files[p.relative_to(directory).as_posix()] = _file_record(p)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    manifest = {
        "kind": kind,
        "deps": json.loads(hashing.canonical_json(deps)),
        "meta": meta or {},
        "files": files,
        "created": now,
        "verified": now,
    }
    _write_json_atomic(directory / MANIFEST, manifest)
    return manifest


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of an artifact directory, checked for shape; CorruptArtifact if missing or malformed."""
    mpath = directory / MANIFEST
    if not mpath.is_file():
        raise CorruptArtifact(f"{directory}: no manifest (incomplete build)")
    try:
        manifest = json.loads(mpath.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptArtifact(f"{directory}: unreadable manifest ({e})") from None
    except OSError as e:
        raise CorruptArtifact(f"{directory}: cannot read its manifest ({e.strerror or e})") from None

    def bad(why: str) -> CorruptArtifact:
        return CorruptArtifact(f"{directory}: malformed manifest ({why})")

    if not isinstance(manifest, dict):
        raise bad(f"a JSON {type(manifest).__name__}, not an object")
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise bad("no 'files' object")
    for name in ("meta", "deps"):
        if name in manifest and not isinstance(manifest[name], dict):
            raise bad(f"'{name}' is not an object")
    for rel, info in files.items():
        parts = Path(rel).parts
        if not rel or Path(rel).is_absolute() or ".." in parts:
            raise bad(f"file name {rel!r} leaves the artifact directory")
        if not isinstance(info, dict):
            raise bad(f"entry for {rel} is not an object")
        sha, size = info.get("sha256"), info.get("size")
        if not (isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
            raise bad(f"entry for {rel} has no valid sha256")
        if not (isinstance(size, int) and not isinstance(size, bool) and size >= 0):
            raise bad(f"entry for {rel} has no valid size")
    return manifest


def _fast_ok(p: Path, info: dict[str, Any], st: os.stat_result) -> bool:
    """Whether a big file passes the cheap check (recorded mtime and fingerprint match)."""
    mtime, fp = info.get("mtime_ns"), info.get("fp")
    if not isinstance(mtime, int) or not isinstance(fp, str):
        return False  # a manifest from before fingerprints: hash in full once, then record them
    if (
        st.st_mtime_ns // 1_000_000_000 != mtime // 1_000_000_000
    ):  # second precision survives copies to coarser filesystems
        return False
    return hashing.fingerprint_file(p, st.st_size) == fp


def _check(directory: Path, mode: str) -> tuple[dict[str, Any], bool]:
    """Check an artifact directory in ``mode`` ("size", "fast" or "full"). Returns (manifest, refreshed):
    ``refreshed`` when a fast check fell back to full hashes whose mtime/fingerprint should be recorded."""
    manifest = read_manifest(directory)
    refreshed = False
    for rel, info in manifest["files"].items():
        p = directory / rel
        try:
            st = p.stat()
        except OSError:
            st = None
        if st is None or not p.is_file():
            raise CorruptArtifact(f"{directory}: missing file {rel}")
        if st.st_size != info["size"]:
            raise CorruptArtifact(f"{directory}: {rel} has the wrong size (truncated?)")
        if mode == "size":
            continue
        try:
            if mode == "fast" and st.st_size > SMALL_FILE and _fast_ok(p, info, st):
                continue
            if hashing.sha256_file(p) != info["sha256"]:
                raise CorruptArtifact(f"{directory}: {rel} fails its sha256 check")
        except OSError as e:  # removed or unreadable while we read it (a concurrent rebuild or `cache rm`)
            raise CorruptArtifact(f"{directory}: cannot read {rel} ({e.strerror or e})") from None
        if mode == "fast" and st.st_size > SMALL_FILE:
            refreshed = True
    return manifest, refreshed


def verify(directory: Path, *, deep: bool = True, fast: bool = False) -> dict[str, Any]:
    """Check an artifact directory against its manifest; raise CorruptArtifact when anything is off.

    ``deep=False``: sizes only. ``deep=True``: full sha256 of every file, or with ``fast=True`` the cheap
    check of a load (see the module docstring)."""
    return _check(directory, "full" if deep and not fast else "fast" if deep else "size")[0]


def record_verified(directory: Path, manifest: dict[str, Any]) -> bool:
    """After a full check passed: record the files' current mtimes and fingerprints (and the time) in the
    manifest so later loads take the cheap path. Best effort: False when the cache is not writable."""
    try:
        files = {
            rel: {**info, **{k: v for k, v in _file_record(directory / rel, info["sha256"]).items() if k != "sha256"}}
            for rel, info in manifest["files"].items()
        }
        updated = {**manifest, "files": files, "verified": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        _write_json_atomic(directory / MANIFEST, updated)
    except OSError:
        return False
    return True


def _load_mode() -> str:
    return "full" if os.environ.get("PPT_CACHE_VERIFY", "").strip().lower() == "full" else "fast"
