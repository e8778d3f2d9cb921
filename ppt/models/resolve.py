"""Name resolution: a local path > a packaged offline alias > a hub id.

A path wins so that a user's directory named like an alias is still theirs; an alias wins over a hub
id so that nothing is downloaded when the same model is on disk. A hub id whose weights a package
carries verbatim (``sentence-transformers/all-MiniLM-L6-v2``) resolves to that alias, offline.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ppt.models.catalog import OFFLINE, Asset
from ppt.models.registry import hub_equivalent, is_installed, locate_file, not_installed_error


@dataclass(frozen=True)
class Resolved:
    """What a model name refers to."""

    name: str  # as given
    source: str  # "path" | "alias" | "hub"
    path: Path | None = None  # local file/dir (for path, and for an installed alias: its main file/dir)
    asset: Asset | None = None  # registry entry (alias)
    hub_id: str | None = None  # for source == "hub"

    @property
    def alias(self) -> str | None:
        return self.asset.alias if self.asset else None

    @property
    def installed(self) -> bool:
        return self.source != "alias" or self.path is not None

    def require_installed(self) -> Path:
        """The local path, or the 'not installed; run: ppt models install ALIAS' PptError."""
        if self.source == "alias" and self.path is None:
            raise not_installed_error(self.asset.alias)
        assert self.path is not None
        return self.path


def _looks_like_path(name: str) -> bool:
    return (
        name.startswith(("/", "./", "../", "~", ".\\", "..\\"))
        or name in (".", "..")
        or (os.sep == "\\" and len(name) > 1 and name[1] == ":")
        or name.endswith((".gguf", ".safetensors", ".bin", ".tiktoken", ".npy"))
    )


def resolve(name: str | os.PathLike) -> Resolved:
    """Resolve a model name. Order: existing local path > offline alias > hub id.

    Raises PptError for an empty name or for something that is clearly meant as a path (``./x``,
    ``/x``, ``~/x``, ``x.gguf``) but does not exist. Does not check hashes or import anything.
    """
    from ppt.io import ExitCode, PptError

    raw = os.fspath(name)
    text = raw.strip()
    if not text:
        raise PptError(
            "empty model name",
            exit_code=ExitCode.USAGE,
            hint="pass a path, an alias (" + ", ".join(OFFLINE) + ") or a hub id",
        )
    p = Path(text).expanduser()
    if p.exists():
        return Resolved(name=raw, source="path", path=p.resolve())
    alias = text if text in OFFLINE else hub_equivalent(text)
    if alias is not None:
        asset = OFFLINE[alias]
        path = locate_file(asset, asset.main) if is_installed(asset) else None
        return Resolved(name=raw, source="alias", path=path, asset=asset)
    if _looks_like_path(text):
        raise PptError(
            f"model path not found: {text}",
            exit_code=ExitCode.CONFIG,
            hint="offline aliases: " + ", ".join(OFFLINE),
        )
    return Resolved(name=raw, source="hub", hub_id=text)


def offline_error(name: str, err: BaseException | None = None):
    """PptError for a hub id that could not be loaded (usually: no network / HF_HUB_OFFLINE=1)."""
    from ppt.io import ExitCode, PptError

    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    why = "HF_HUB_OFFLINE is set" if offline else "the hub is unreachable or the id does not exist"
    detail = f" ({type(err).__name__}: {str(err).splitlines()[0][:200]})" if err is not None and str(err) else ""
    return PptError(
        f"cannot load {name!r} from the Hugging Face hub: {why}{detail}",
        exit_code=ExitCode.CONFIG,
        hint="models that work offline: " + ", ".join(OFFLINE) + " (see `ppt models ls`), or pass a local directory",
    )
