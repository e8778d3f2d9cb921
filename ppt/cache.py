"""Content-addressed artifact cache.

Every artifact (an embedding space, a sorted distance table, a probability table, a dequantized model)
lives in its own directory ``$PPT_CACHE/<kind>/<key>/`` where ``key`` hashes everything the artifact
depends on. Why a directory per artifact: it is built in a temporary sibling and renamed into place, so
readers see either nothing or a complete artifact; a ``MANIFEST.json`` written last records the sha256
and size of each file, and loading verifies it, so a truncated or corrupted artifact is detected and
rebuilt, never used. A file lock per key makes concurrent builders wait for each other instead of
racing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

MANIFEST = "MANIFEST.json"
_HASH_CHUNK = 1 << 22


def cache_dir() -> Path:
    """Root of the cache: ``$PPT_CACHE`` or the platform's user cache directory."""
    env = os.environ.get("PPT_CACHE")
    if env:
        root = Path(env).expanduser()
    else:
        from platformdirs import user_cache_dir

        root = Path(user_cache_dir("ppt"))
    root.mkdir(parents=True, exist_ok=True)
    return root


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


class CorruptArtifact(Exception):
    """An artifact whose files do not match its manifest."""


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
        blob = canonical_json({k: v["sha256"] for k, v in sorted(files.items())})
        return hashlib.sha256(blob).hexdigest()[:16]

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def meta(self) -> dict[str, Any]:
        return self.manifest.get("meta", {})


def write_manifest(directory: Path, kind: str, deps: dict[str, Any], meta: dict[str, Any] | None = None) -> dict:
    """Hash every file of a freshly built artifact directory and write its manifest (last)."""
    files = {}
    for p in sorted(directory.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            rel = p.relative_to(directory).as_posix()
            files[rel] = {"sha256": sha256_file(p), "size": p.stat().st_size}
    manifest = {
        "kind": kind,
        "deps": json.loads(canonical_json(deps)),
        "meta": meta or {},
        "files": files,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_bytes(json.dumps(manifest, indent=1, sort_keys=True).encode())
    os.replace(tmp, directory / MANIFEST)
    return manifest


def verify(directory: Path, *, deep: bool = True) -> dict[str, Any]:
    """Check an artifact directory against its manifest; raise CorruptArtifact when anything is off."""
    mpath = directory / MANIFEST
    if not mpath.is_file():
        raise CorruptArtifact(f"{directory}: no manifest (incomplete build)")
    try:
        manifest = json.loads(mpath.read_bytes())
        files = manifest["files"]
    except (ValueError, KeyError) as e:
        raise CorruptArtifact(f"{directory}: unreadable manifest ({e})") from None
    for rel, info in files.items():
        p = directory / rel
        if not p.is_file():
            raise CorruptArtifact(f"{directory}: missing file {rel}")
        if p.stat().st_size != info["size"]:
            raise CorruptArtifact(f"{directory}: {rel} has the wrong size (truncated?)")
        if deep and sha256_file(p) != info["sha256"]:
            raise CorruptArtifact(f"{directory}: {rel} fails its sha256 check")
    return manifest


class Cache:
    """Builds artifacts once, verifies them on every load, rebuilds what is corrupt."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else cache_dir()
        self.root.mkdir(parents=True, exist_ok=True)

    def path_for(self, kind: str, key: str) -> Path:
        return self.root / kind / key

    def lookup(self, kind: str, deps: dict[str, Any], *, deep: bool = True) -> Artifact | None:
        """The verified artifact for these deps, or None if absent or corrupt."""
        key = artifact_key(kind, deps)
        path = self.path_for(kind, key)
        if not path.exists():
            return None
        try:
            manifest = verify(path, deep=deep)
        except CorruptArtifact:
            return None
        return Artifact(kind, key, path, manifest)

    def get_or_build(
        self,
        kind: str,
        deps: dict[str, Any],
        build: Callable[[Path], dict[str, Any] | None],
        *,
        deep: bool = True,
        on_rebuild: Callable[[str], None] | None = None,
    ) -> Artifact:
        """Return the artifact for ``deps``, building it with ``build(tmpdir)`` if needed.

        ``build`` writes its files into the given empty directory and may return a metadata dict
        stored in the manifest. Concurrent callers with the same deps serialize on a file lock; the
        loser of the race finds the winner's verified artifact and does not build again.
        """
        key = artifact_key(kind, deps)
        final = self.path_for(kind, key)
        final.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(final) + ".lock"):
            if final.exists():
                try:
                    return Artifact(kind, key, final, verify(final, deep=deep))
                except CorruptArtifact as e:
                    if on_rebuild:
                        on_rebuild(str(e))
                    shutil.rmtree(final, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=final.parent))
            try:
                meta = build(tmp) or {}
                manifest = write_manifest(tmp, kind, deps, meta)
                os.replace(tmp, final)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            return Artifact(kind, key, final, manifest)

    def entries(self) -> list[tuple[str, str, Path]]:
        """(kind, key, path) of every artifact directory, complete or not."""
        out = []
        if not self.root.exists():
            return out
        for kdir in sorted(p for p in self.root.iterdir() if p.is_dir()):
            for adir in sorted(p for p in kdir.iterdir() if p.is_dir() and not p.name.startswith(".")):
                out.append((kdir.name, adir.name, adir))
        return out

    def remove(self, kind: str, key: str) -> None:
        path = self.path_for(kind, key)
        with FileLock(str(path) + ".lock"):
            shutil.rmtree(path, ignore_errors=True)
        Path(str(path) + ".lock").unlink(missing_ok=True)


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
