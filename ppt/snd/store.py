"""Trained denoisers on disk: a cache artifact (kind ``snd-denoiser``, keyed by the model hash, eta, the
architecture and the training recipe) or a directory of the user's (``-o DIR``) with the same files and
manifest, so both are checked the same way on load (``ppt cache ls|verify`` cover the cached ones).

Files: ``denoiser.safetensors`` (weights) and ``denoiser.json`` (config, eta, model id/hash, training
figures). Only public data goes in: the denoiser is trained on a public corpus and shared with clients.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ppt.cache import MANIFEST, Artifact, Cache, CorruptArtifact, verify, write_manifest
from ppt.io import ExitCode, PptError
from ppt.snd.denoiser import Denoiser, DenoiserConfig

KIND = "snd-denoiser"
WEIGHTS = "denoiser.safetensors"
META = "denoiser.json"


def artifact_deps(model_hash: str, model_id: str, eta: float, cfg: DenoiserConfig, recipe: dict[str, Any]) -> dict:
    return {"model_hash": model_hash, "model": model_id, "eta": float(eta), "arch": cfg.arch(), "recipe": recipe}


def write_files(directory: Path, model: Denoiser, meta: dict[str, Any]) -> dict[str, Any]:
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(directory / WEIGHTS))
    (directory / META).write_text(json.dumps(meta, indent=1, sort_keys=True, default=str))
    return meta


def save_cached(model: Denoiser, deps: dict[str, Any], meta: dict[str, Any], cache: Cache | None = None) -> Artifact:
    cache = cache or Cache()
    return cache.get_or_build(KIND, deps, lambda tmp: write_files(tmp, model, meta))


def save_dir(directory: Path, model: Denoiser, deps: dict[str, Any], meta: dict[str, Any]) -> Path:
    """Write a denoiser to the user's directory (files, then the manifest last)."""
    directory = Path(directory)
    if directory.exists() and any(p.name not in (WEIGHTS, META, MANIFEST) for p in directory.iterdir()):
        raise PptError(
            f"{directory} exists and holds other files; refusing to write a denoiser into it",
            ExitCode.USAGE,
            hint="pass a new or empty directory to -o",
        )
    write_files(directory, model, meta)
    write_manifest(directory, KIND, deps, meta)
    return directory


def find_cached(model_hash: str, eta: float, cache: Cache | None = None) -> list[Any]:
    """Cached denoisers for this model and eta, newest first."""
    cache = cache or Cache()
    out = []
    for e in cache.scan():
        if e.kind != KIND or e.state != "ok" or e.manifest is None:
            continue
        deps = e.manifest.get("deps", {})
        if deps.get("model_hash") == model_hash and _same_eta(deps.get("eta"), eta):
            out.append(e)
    return sorted(out, key=lambda e: e.manifest.get("created", ""), reverse=True)


def _same_eta(a: Any, b: float) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    except (TypeError, ValueError):
        return False


def resolve_ref(ref: str, model_hash: str, eta: float, cache: Cache | None = None) -> Path:
    """``ref``: a directory, a cache key (or a unique prefix of one), or ``auto`` (the newest cached
    denoiser for this model and eta)."""
    p = Path(ref).expanduser()
    if p.is_dir():
        return p
    cache = cache or Cache()
    if ref == "auto":
        hits = find_cached(model_hash, eta, cache)
        if not hits:
            raise PptError(
                f"no cached denoiser for this model (hash {model_hash}) at eta {eta:g}",
                ExitCode.CONFIG,
                hint="train one first: ppt snd train-denoiser --model ... --eta ...",
            )
        return hits[0].path
    hits = [e for e in cache.scan() if e.kind == KIND and e.state == "ok" and e.key.startswith(ref)] if ref else []
    if len(hits) != 1:
        why = "no" if not hits else "more than one"
        raise PptError(
            f"--denoiser {ref[:40]!r}: {why} directory or cached denoiser matches",
            ExitCode.CONFIG,
            hint="pass a directory written by `ppt snd train-denoiser -o`, a key from `ppt cache ls`, or auto",
        )
    return hits[0].path


def load(directory: Path, device: Any = "cpu") -> tuple[Denoiser, dict[str, Any], str]:
    """``(denoiser, meta, content hash)`` after checking the directory against its manifest."""
    from safetensors.torch import load_file

    directory = Path(directory)
    try:
        manifest = verify(directory, deep=True, fast=True)
    except CorruptArtifact as e:
        raise PptError(
            f"denoiser {directory}: {e}",
            ExitCode.DATAERR,
            hint="retrain it, or `ppt cache verify` / `ppt cache rm` a damaged cache entry",
        ) from None
    if manifest.get("kind") != KIND:
        raise PptError(f"{directory} is a {manifest.get('kind')!r} artifact, not a denoiser", ExitCode.CONFIG)
    meta = json.loads((directory / META).read_text())
    model = Denoiser(DenoiserConfig.from_dict(meta["config"]))
    model.load_state_dict(load_file(str(directory / WEIGHTS)))
    art = Artifact(KIND, directory.name, directory, manifest)
    return model.to(device).eval(), meta, art.content_hash
