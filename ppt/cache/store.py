"""The cache proper: get-or-build under a per-key lock with atomic rename, lock-free checked hits, removal."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ppt.cache.hashing import artifact_key
from ppt.cache.listing import Entry, scan
from ppt.cache.locks import STALE_ROOT_BUILD_S, FileLock, Timeout
from ppt.cache.manifest import (
    Artifact,
    CorruptArtifact,
    _check,
    _load_mode,
    record_verified,
    write_manifest,
)
from ppt.cache.paths import (
    _NO_SPACE,
    _UNWRITABLE,
    _age_s,
    _cache_error,
    _ensure_root,
    cache_dir,
)


class Cache:
    """Builds artifacts once, checks them on every load, rebuilds what is corrupt."""

    def __init__(self, root: Path | None = None):
        self.root = _ensure_root(Path(root)) if root is not None else cache_dir()

    def path_for(self, kind: str, key: str) -> Path:
        return self.root / kind / key

    def _load(self, kind: str, key: str, path: Path, deep: bool) -> Artifact:
        """The artifact at ``path`` after a load check; CorruptArtifact if it fails. Writes nothing but a
        best-effort manifest refresh, takes no lock."""
        manifest, refreshed = _check(path, _load_mode() if deep else "size")
        if refreshed:
            record_verified(path, manifest)
        return Artifact(kind, key, path, manifest)

    def lookup(self, kind: str, deps: dict[str, Any], *, deep: bool = True) -> Artifact | None:
        """The checked artifact for these deps, or None if absent or corrupt (no lock, nothing written)."""
        key = artifact_key(kind, deps)
        path = self.path_for(kind, key)
        if not path.exists():
            return None
        try:
            return self._load(kind, key, path, deep)
        except CorruptArtifact:
            return None

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

        A hit takes no lock and writes nothing (read-only caches work). On a miss, ``build`` writes its
        files into the given empty directory and may return a metadata dict stored in the manifest.
        Concurrent callers with the same deps serialize on a file lock; the loser of the race finds the
        winner's checked artifact and does not build again. A cache that cannot be written raises
        PptError (exit 78; 74 when the disk is full) naming the missing artifact.
        """
        key = artifact_key(kind, deps)
        final = self.path_for(kind, key)
        if final.is_dir():
            with contextlib.suppress(CorruptArtifact):
                return self._load(kind, key, final, deep)
        what = f"build {kind}/{key} (not in the cache)"
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(final) + ".lock")
            lock.acquire()
        except OSError as e:
            raise _cache_error(self.root, e, what) from None
        try:
            if final.exists():
                try:
                    return self._load(kind, key, final, deep)
                except CorruptArtifact as e:
                    if on_rebuild:
                        on_rebuild(str(e))
                    shutil.rmtree(final, ignore_errors=True)
            self._reap_builds(final)
            try:
                tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=final.parent))
            except OSError as e:
                raise _cache_error(self.root, e, what) from None
            try:
                meta = build(tmp) or {}
                manifest = write_manifest(tmp, kind, deps, meta)
                os.replace(tmp, final)
            except OSError as e:
                shutil.rmtree(tmp, ignore_errors=True)
                # errno None: numpy's "Failed to write" when the disk fills mid-array: an I/O error too
                if e.errno in _NO_SPACE or e.errno in _UNWRITABLE or e.errno is None:
                    raise _cache_error(self.root, e, what) from e
                raise
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            return Artifact(kind, key, final, manifest)
        finally:
            lock.release()

    @staticmethod
    def _reap_builds(final: Path) -> list[Path]:
        """Remove the build directories of ``final``'s key (call with its lock held: none is live)."""
        removed = []
        for p in final.parent.glob(f".{final.name}.*"):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
        return removed

    # ---- inventory ---------------------------------------------------------------------------------

    def entries(self) -> list[tuple[str, str, Path]]:
        """(kind, key, path) of every artifact directory, complete or not (build directories excluded)."""
        return [(e.kind, e.key, e.path) for e in self.scan() if not e.is_build_dir]

    def scan(self) -> list[Entry]:
        """Every directory in the cache with its state (see Entry); never raises on a damaged entry."""
        return scan(self.root)

    def remove(self, kind: str, key: str) -> None:
        path = self.path_for(kind, key)
        try:
            with FileLock(str(path) + ".lock"):
                shutil.rmtree(path, ignore_errors=True)
                self._reap_builds(path)
            Path(str(path) + ".lock").unlink(missing_ok=True)
        except OSError as e:
            raise _cache_error(self.root, e, f"remove {kind}/{key}") from None

    def remove_build_dir(self, entry: Entry) -> bool:
        """Remove a stale build directory; False (and nothing removed) if a live builder holds its lock."""
        if entry.kind == "":
            if _age_s(entry.path) < STALE_ROOT_BUILD_S:
                return False
            shutil.rmtree(entry.path, ignore_errors=True)
            return True
        key = entry.key[1:].split(".", 1)[0]
        lock = FileLock(str(entry.path.parent / (key + ".lock")), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            return False
        except OSError as e:
            raise _cache_error(self.root, e, f"remove {entry.kind}/{entry.key}") from None
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
        finally:
            lock.release()
        return True
