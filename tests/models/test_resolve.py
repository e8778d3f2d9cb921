"""ppt.models.resolve: the resolution order (path, then alias, then hub id) and carrier lookup."""

from __future__ import annotations

import sys

import pytest

from ppt.io import ExitCode, PptError
from ppt.models import registry
from ppt.models.resolve import resolve
from tests.helpers import FAKE_TOP


def test_resolution_order_path_then_alias_then_hub(tmp_path, monkeypatch, fake_asset):
    asset, pkg = fake_asset
    # alias
    r = resolve("fake-asset")
    assert r.source == "alias" and r.asset is asset and r.path == pkg.resolve() and r.installed
    # a local directory with the alias's name wins over the alias
    work = tmp_path / "work"
    (work / "fake-asset").mkdir(parents=True)
    monkeypatch.chdir(work)
    r = resolve("fake-asset")
    assert r.source == "path" and r.path == (work / "fake-asset").resolve()
    # anything else that is not a path is a hub id
    r = resolve("some-org/some-model")
    assert r.source == "hub" and r.hub_id == "some-org/some-model" and r.path is None
    # a file path works too
    f = work / "model.gguf"
    f.write_bytes(b"x")
    assert resolve(str(f)).source == "path"
    assert resolve("model.gguf").path == f.resolve()


def test_resolve_missing_path_and_empty_name(tmp_path):
    with pytest.raises(PptError) as e:
        resolve(str(tmp_path / "does-not-exist"))
    assert "not found" in e.value.message
    with pytest.raises(PptError):
        resolve("./nope/model")
    with pytest.raises(PptError):
        resolve("weights.gguf")
    with pytest.raises(PptError) as e:
        resolve("  ")
    assert e.value.exit_code == ExitCode.USAGE


def test_hub_id_of_a_packaged_model_resolves_to_the_alias():
    r = resolve("sentence-transformers/all-MiniLM-L6-v2")
    assert r.source == "alias" and r.alias == "minilm"


def test_carrier_is_located_without_importing_it(fake_asset):
    asset, pkg = fake_asset
    assert registry.locate_file(asset, asset.main) == pkg
    files = registry.asset_files("fake-asset")
    assert set(files) == {"a.txt", "b.bin"}
    assert FAKE_TOP not in sys.modules  # its __init__ raises if executed
