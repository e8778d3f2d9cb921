"""Content-addressed artifact cache.

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

import contextlib
import errno
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

from filelock import FileLock, Timeout

MANIFEST = "MANIFEST.json"
_HASH_CHUNK = 1 << 22
SMALL_FILE = 4 << 20  # files up to this size are fully hashed on every load
_FP_EDGE = 1 << 20  # fingerprint: first and last MiB ...
_FP_BLOCK = 1 << 16  # ... and this many bytes at each of _FP_SAMPLES offsets spread over the middle
_FP_SAMPLES = 16
FP_VERSION = 1
STALE_ROOT_BUILD_S = 3600  # build dirs in the cache root have no lock: stale after an hour untouched

# errnos that mean "this cache cannot be written" (a configuration problem, exit 78) or "the disk is full" (74)
_UNWRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT}


def _cache_error(root: Path, exc: OSError, what: str) -> Exception:
    """The PptError (exit 78, or 74 for a full disk) for an OSError met while using the cache at ``root``."""
    from ppt.io.errors import PptError
    from ppt.io.exitcodes import ExitCode

    reason = exc.strerror or str(exc)
    if exc.errno in _NO_SPACE:
        return PptError(f"ppt cache {root}: no space left on the device: cannot {what}", exit_code=ExitCode.IOERR,
                        hint="free disk space (`ppt cache ls`, `ppt cache rm ...`) or set PPT_CACHE to a bigger disk")
    if exc.errno in _UNWRITABLE:
        return PptError(f"ppt cache {root} is not writable ({reason}): cannot {what}",
                        exit_code=ExitCode.CONFIG,
                        hint="set PPT_CACHE to a writable directory, or build the artifacts into this cache first "
                             "(`ppt precompute ...`) while it is writable; a read-only cache can only serve what it holds")
    return PptError(f"ppt cache {root}: cannot {what} ({reason})", exit_code=ExitCode.CONFIG,
                    hint="set PPT_CACHE to a writable directory")


def _ensure_root(root: Path) -> Path:
    from ppt.io.errors import PptError
    from ppt.io.exitcodes import ExitCode

    if root.is_dir():
        return root
    hint = ("set PPT_CACHE to a directory ppt can create or use" if os.environ.get("PPT_CACHE")
            else "set PPT_CACHE to a directory ppt can create or use (the default is the user cache directory)")
    if root.exists():
        raise PptError(f"PPT_CACHE={root} is not a directory", exit_code=ExitCode.CONFIG, hint=hint)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PptError(f"cannot create the ppt cache directory {root} ({e.strerror or e})",
                       exit_code=ExitCode.CONFIG, hint=hint) from None
    return root


def cache_dir() -> Path:
    """Root of the cache: ``$PPT_CACHE`` or the platform's user cache directory (created if absent).

    Raises PptError (exit 78) when it is not a directory or cannot be created."""
    env = os.environ.get("PPT_CACHE")
    if env:
        root = Path(env).expanduser()
    else:
        from platformdirs import user_cache_dir

        root = Path(user_cache_dir("ppt"))
    return _ensure_root(root)


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


def _file_record(p: Path, sha256: str | None = None) -> dict[str, Any]:
    st = p.stat()
    return {"sha256": sha256 or sha256_file(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "fp": fingerprint_file(p, st.st_size)}


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
        blob = canonical_json({k: v["sha256"] for k, v in sorted(files.items())})
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
        "deps": json.loads(canonical_json(deps)),
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
    if st.st_mtime_ns // 1_000_000_000 != mtime // 1_000_000_000:  # second precision survives copies to coarser filesystems
        return False
    return fingerprint_file(p, st.st_size) == fp


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
            if sha256_file(p) != info["sha256"]:
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
        files = {rel: {**info, **{k: v for k, v in _file_record(directory / rel, info["sha256"]).items() if k != "sha256"}}
                 for rel, info in manifest["files"].items()}
        updated = {**manifest, "files": files, "verified": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        _write_json_atomic(directory / MANIFEST, updated)
    except OSError:
        return False
    return True


def _load_mode() -> str:
    return "full" if os.environ.get("PPT_CACHE_VERIFY", "").strip().lower() == "full" else "fast"


@dataclass(frozen=True)
class Entry:
    """One directory under a kind in the cache, as ``ppt cache ls`` shows it.

    ``state``: "ok" (a manifest of the right shape; files are not checked here), "incomplete" (no
    manifest), "bad-manifest" (unreadable or malformed), "building" (a build directory whose key is
    locked by a live builder) or "stale-build" (a build directory left by a killed build)."""

    kind: str
    key: str
    path: Path
    state: str
    detail: str = ""
    manifest: dict[str, Any] | None = None

    @property
    def is_build_dir(self) -> bool:
        return self.state in ("building", "stale-build")


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
                if e.errno in _NO_SPACE or e.errno in _UNWRITABLE:
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
        out: list[Entry] = []
        if not self.root.is_dir():
            return out
        for kdir in sorted(self.root.iterdir()):
            if not kdir.is_dir():
                continue
            if kdir.name.startswith("."):  # a lock-less build dir in the root (e.g. a GGUF being assembled)
                age = _age_s(kdir)
                out.append(Entry("", kdir.name, kdir, "stale-build" if age >= STALE_ROOT_BUILD_S else "building",
                                 f"untouched for {age / 60:.0f} min"))
                continue
            for adir in sorted(kdir.iterdir()):
                if not adir.is_dir():
                    continue
                if adir.name.startswith("."):
                    key = adir.name[1:].split(".", 1)[0]
                    live = _lock_held(kdir / (key + ".lock"))
                    out.append(Entry(kdir.name, adir.name, adir, "building" if live else "stale-build",
                                     "a live builder holds its lock" if live else "left by a killed build"))
                    continue
                try:
                    out.append(Entry(kdir.name, adir.name, adir, "ok", manifest=read_manifest(adir)))
                except CorruptArtifact as e:
                    state = "incomplete" if not (adir / MANIFEST).is_file() else "bad-manifest"
                    out.append(Entry(kdir.name, adir.name, adir, state, str(e)))
        return out

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


def _age_s(path: Path) -> float:
    """Seconds since anything directly in ``path`` (or the directory itself) was last modified."""
    newest = 0.0
    with contextlib.suppress(OSError):
        newest = path.stat().st_mtime
        for p in path.iterdir():
            with contextlib.suppress(OSError):
                newest = max(newest, p.stat().st_mtime)
    return max(0.0, time.time() - newest)


def _lock_held(lock_path: Path) -> bool:
    """Whether a live process holds the build lock at ``lock_path`` (probed without creating or writing it)."""
    import fcntl

    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return False  # no lock file: no builder ever took it (or it was removed)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def dir_size(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        with contextlib.suppress(OSError):
            if p.is_file():
                total += p.stat().st_size
    return total
