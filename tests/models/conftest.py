"""Fixtures for ppt.models tests: a fake carrier package on sys.path, so registry behaviour is tested
without the real packages."""

from __future__ import annotations

import hashlib

import pytest

from ppt.models.catalog import OFFLINE, Asset
from tests.helpers import FAKE_TOP


@pytest.fixture
def fake_asset(tmp_path, monkeypatch, tmp_cache):
    site = tmp_path / "site"
    pkg = site / FAKE_TOP / "data"
    pkg.mkdir(parents=True)
    (site / FAKE_TOP / "__init__.py").write_text("raise RuntimeError('carrier packages must never be imported')\n")
    a = pkg / "a.txt"
    b = pkg / "b.bin"
    a.write_bytes(b"hello offline world\n")
    b.write_bytes(bytes(range(256)) * 64)
    asset = Asset(
        alias="fake-asset",
        kind="word-vectors",
        package="ppt-fake-carrier",
        version="9.9.9",
        top=FAKE_TOP,
        main=f"{FAKE_TOP}/data",
        files={
            f"{FAKE_TOP}/data/a.txt": hashlib.sha256(a.read_bytes()).hexdigest(),
            f"{FAKE_TOP}/data/b.bin": hashlib.sha256(b.read_bytes()).hexdigest(),
        },
        no_deps=True,
        license="test",
        description="fake",
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setitem(OFFLINE, asset.alias, asset)
    return asset, pkg
