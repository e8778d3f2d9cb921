"""GGUF causal LMs -> plain safetensors checkpoints in the ppt cache.

transformers reads a GGUF file by dequantizing every tensor (~15 s for SmolLM2-135M on a laptop CPU);
a float32 safetensors copy loads in well under a second. The first load converts and stores model +
tokenizer (with its chat template) as a cache artifact keyed by the GGUF's sha256, so any later
process, or a GPU server the cache directory is copied to, skips the conversion. Artifacts are
checked against their manifest's sha256 once per (path, size, mtime), like the packaged files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ppt.log import note
from ppt.models._quiet import quiet_loading
from ppt.models.catalog import OFFLINE, Asset
from ppt.models.registry import _stat_key, verify_asset, verify_files
from ppt.models.resolve import Resolved

FORMAT = 1  # bump to invalidate converted checkpoints when the conversion changes


def file_sha256(path: Path, cache=None) -> str:
    """sha256 of a local file, remembered in the cache per (path, size, mtime)."""
    from ppt.cache import Cache, sha256_file

    cache = cache or Cache()
    art = cache.get_or_build(
        "file-sha256", {"file": _stat_key(Path(path))}, lambda _tmp: {"sha256": sha256_file(Path(path))}, deep=False
    )
    return art.meta["sha256"]


def _load_gguf_model(directory: Path, filename: str, dtype=None):
    from transformers import AutoModelForCausalLM

    kwargs = {}
    try:  # transformers >= 5: ask for a plain dense model (no GGUF quantizer left attached)
        from transformers.utils.quantization_config import GgufConfig

        kwargs["quantization_config"] = GgufConfig(dequantize=True)
    except ImportError:  # pragma: no cover - older transformers dequantize unconditionally
        pass
    if dtype is not None:
        kwargs["dtype"] = dtype
    model = AutoModelForCausalLM.from_pretrained(str(directory), gguf_file=filename, **kwargs)
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:  # an older path that leaves the quantizer attached: weights are dense already
        quantizer.remove_quantization_config(model)
    return model


def _load_gguf_tokenizer(directory: Path, filename: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(directory), gguf_file=filename)


class GgufSource:
    """Where a GGUF comes from: a packaged alias (single file or chunks) or a local file."""

    def __init__(self, resolved: Resolved, cache=None):
        from ppt.cache import Cache

        self.cache = cache or Cache()
        self.resolved = resolved
        self.asset: Asset | None = resolved.asset
        if self.asset is not None:
            self.label = self.asset.alias
            self.sha256 = self.asset.assembled[1] if self.asset.assembled else next(iter(self.asset.files.values()))
        else:
            path = Path(resolved.path)
            if path.is_dir():
                path = find_gguf(path)
            self.path = path
            self.sha256 = file_sha256(path, self.cache)
            # the same bytes as a packaged GGUF share its converted checkpoint
            self.label = next(
                (
                    a.alias
                    for a in OFFLINE.values()
                    if a.kind == "causal-lm" and not a.assembled and self.sha256 in a.files.values()
                ),
                "gguf",
            )

    def deps(self) -> dict:
        return {"format": FORMAT, "gguf_sha256": self.sha256}

    def kind(self, what: str) -> str:
        return f"{what}-{self.label}"

    def with_file(self, fn: Callable[[Path, str], object]):
        """Call fn(directory, filename) with the GGUF on disk (assembling chunks into a temp dir)."""
        if self.asset is None:
            return fn(self.path.parent, self.path.name)
        self.resolved.require_installed()
        verify_asset(self.asset.alias, cache=self.cache)
        from ppt.models.registry import locate_file

        files = [locate_file(self.asset, rel) for rel in self.asset.files]
        if not self.asset.assembled:
            return fn(files[0].parent, files[0].name)
        name, sha = self.asset.assembled
        tmpdir = Path(tempfile.mkdtemp(prefix=".assemble-", dir=self.cache.root))
        try:
            target = tmpdir / name
            with open(target, "wb") as out:
                for f in files:
                    with open(f, "rb") as src:
                        shutil.copyfileobj(src, out, 1 << 22)
            from ppt.cache import sha256_file
            from ppt.io import ExitCode, PptError

            if sha256_file(target) != sha:
                raise PptError(
                    f"{self.asset.alias}: the assembled {name} fails its sha256 check",
                    exit_code=ExitCode.CONFIG,
                    hint=self.asset.reinstall_hint,
                )
            return fn(tmpdir, name)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)


def find_gguf(directory: Path) -> Path:
    from ppt.io import ExitCode, PptError

    found = sorted(directory.glob("*.gguf"))
    if len(found) != 1:
        raise PptError(
            f"{directory}: expected exactly one .gguf file, found {len(found)}",
            exit_code=ExitCode.CONFIG,
            hint="pass the .gguf file itself",
        )
    return found[0]


def _verified_artifact(cache, kind: str, deps: dict, build: Callable[[Path], dict]):
    """get_or_build with a cheap load check (sizes) plus a marker-cached deep check of the files."""
    from ppt.io import PptError

    built: list[bool] = []

    def tracked(tmp: Path) -> dict:
        built.append(True)
        return build(tmp)

    for attempt in (0, 1):
        built.clear()
        art = cache.get_or_build(kind, deps, tracked, deep=False)
        expected = {art.path / rel: info["sha256"] for rel, info in art.manifest["files"].items()}
        try:
            # a fresh build was hashed by write_manifest moments ago: record it without re-hashing
            verify_files(
                expected, f"cached {kind}/{art.key}", "it is rebuilt automatically", cache=cache, trusted=bool(built)
            )
            return art
        except PptError:
            if attempt:
                raise
            note(f"cached {kind}/{art.key} is corrupt; rebuilding")
            cache.remove(kind, art.key)
    raise AssertionError("unreachable")  # pragma: no cover


def converted_model_dir(resolved: Resolved, cache=None) -> Path:
    """Directory of the safetensors checkpoint (model + tokenizer) converted from this GGUF."""
    src = GgufSource(resolved, cache)
    kind = src.kind("model")

    def build(tmp: Path) -> dict:
        import time

        note(f"converting {src.label} GGUF to safetensors (once; cached under {src.cache.root})")
        t0 = time.perf_counter()

        def convert(directory: Path, filename: str):
            with quiet_loading():
                model = _load_gguf_model(directory, filename)
                tok = _load_gguf_tokenizer(directory, filename)
                model.save_pretrained(str(tmp), safe_serialization=True)
                tok.save_pretrained(str(tmp))
            return model.config.model_type

        model_type = src.with_file(convert)
        for p in tmp.rglob("*"):  # save_pretrained may create 0600 files; the cache is shared read-only
            if p.is_file():
                os.chmod(p, 0o644)
        secs = time.perf_counter() - t0
        note(f"converted {src.label} in {secs:.1f} s")
        return {"source": src.label, "model_type": model_type, "convert_seconds": round(secs, 2)}

    return _verified_artifact(src.cache, kind, src.deps(), build).path


def tokenizer_dir(resolved: Resolved, cache=None) -> Path:
    """A directory holding just the tokenizer of this GGUF (reuses the converted model when present)."""
    src = GgufSource(resolved, cache)
    art = src.cache.lookup(src.kind("model"), src.deps(), deep=False)
    if art is not None:
        return art.path

    def build(tmp: Path) -> dict:
        def convert(directory: Path, filename: str):
            with quiet_loading():
                _load_gguf_tokenizer(directory, filename).save_pretrained(str(tmp))

        src.with_file(convert)
        return {"source": src.label}

    return _verified_artifact(src.cache, src.kind("tokenizer"), src.deps(), build).path
