"""The inventory ``ppt cache ls`` shows: every directory under the cache root with its state (complete,
incomplete, bad manifest, a live or a stale build)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppt.cache.locks import STALE_ROOT_BUILD_S, _lock_held
from ppt.cache.manifest import MANIFEST, CorruptArtifact, read_manifest
from ppt.cache.paths import _age_s

# kinds that no version of ppt reads any more (their artifacts only take disk): `ppt cache rm obsolete`
OBSOLETE_KINDS = {
    "santext-table": "SanText(+) computes its rows per batch since 0.1.x; nothing reads these per-eps tables",
}


@dataclass(frozen=True)
class Entry:
    """One directory under a kind in the cache, as ``ppt cache ls`` shows it.

    ``state``: "ok" (a manifest of the right shape; files are not checked here), "incomplete" (no
    manifest), "bad-manifest" (unreadable or malformed), "building" (a build directory whose key is
    locked by a live builder), "stale-build" (a build directory left by a killed build) or "obsolete"
    (a well-formed artifact of a kind in ``OBSOLETE_KINDS``)."""

    kind: str
    key: str
    path: Path
    state: str
    detail: str = ""
    manifest: dict[str, Any] | None = None

    @property
    def is_build_dir(self) -> bool:
        return self.state in ("building", "stale-build")


def scan(root: Path) -> list[Entry]:
    """Every directory in the cache with its state (see Entry); never raises on a damaged entry."""
    out: list[Entry] = []
    if not root.is_dir():
        return out
    for kdir in sorted(root.iterdir()):
        if not kdir.is_dir():
            continue
        if kdir.name.startswith("."):  # a lock-less build dir in the root (e.g. a GGUF being assembled)
            age = _age_s(kdir)
            out.append(
                Entry(
                    "",
                    kdir.name,
                    kdir,
                    "stale-build" if age >= STALE_ROOT_BUILD_S else "building",
                    f"untouched for {age / 60:.0f} min",
                )
            )
            continue
        for adir in sorted(kdir.iterdir()):
            if not adir.is_dir():
                continue
            if adir.name.startswith("."):
                key = adir.name[1:].split(".", 1)[0]
                live = _lock_held(kdir / (key + ".lock"))
                out.append(
                    Entry(
                        kdir.name,
                        adir.name,
                        adir,
                        "building" if live else "stale-build",
                        "a live builder holds its lock" if live else "left by a killed build",
                    )
                )
                continue
            try:
                manifest = read_manifest(adir)
                if kdir.name in OBSOLETE_KINDS:
                    out.append(Entry(kdir.name, adir.name, adir, "obsolete", OBSOLETE_KINDS[kdir.name], manifest))
                else:
                    out.append(Entry(kdir.name, adir.name, adir, "ok", manifest=manifest))
            except CorruptArtifact as e:
                state = "incomplete" if not (adir / MANIFEST).is_file() else "bad-manifest"
                out.append(Entry(kdir.name, adir.name, adir, state, str(e)))
    return out
