"""Cache: content addressing, integrity checks, rebuild of corrupt artifacts, concurrent builders."""

import multiprocessing as mp
import time
from pathlib import Path

import pytest

from ppt.cache import Cache, CorruptArtifact, artifact_key, verify


def _write(tmp: Path, payload: bytes = b"x" * 1000) -> dict:
    (tmp / "data.bin").write_bytes(payload)
    return {"n": len(payload)}


def test_key_depends_on_every_dep():
    assert artifact_key("k", {"a": 1, "b": 2}) == artifact_key("k", {"b": 2, "a": 1})
    assert artifact_key("k", {"a": 1}) != artifact_key("k", {"a": 2})
    assert artifact_key("k", {"a": 1}) != artifact_key("j", {"a": 1})


def test_build_once_then_reuse(tmp_path):
    cache = Cache(tmp_path)
    calls = []
    build = lambda d: calls.append(1) or _write(d)  # noqa: E731
    a = cache.get_or_build("t", {"v": 1}, build)
    b = cache.get_or_build("t", {"v": 1}, build)
    assert calls == [1]
    assert a.path == b.path and a.meta == {"n": 1000}
    assert (a.path / "data.bin").read_bytes() == b"x" * 1000


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete_manifest", "delete_file"])
def test_corrupt_artifact_is_detected_and_rebuilt(tmp_path, damage):
    cache = Cache(tmp_path)
    art = cache.get_or_build("t", {"v": 1}, _write)
    f = art.path / "data.bin"
    if damage == "truncate":
        f.write_bytes(b"x" * 10)
    elif damage == "flip":
        f.write_bytes(b"y" + b"x" * 999)  # same size, different content
    elif damage == "delete_manifest":
        (art.path / "MANIFEST.json").unlink()
    else:
        f.unlink()
    with pytest.raises(CorruptArtifact):
        verify(art.path)
    assert cache.lookup("t", {"v": 1}) is None
    rebuilt = []
    art2 = cache.get_or_build(
        "t", {"v": 1}, lambda d: rebuilt.append(1) or _write(d), on_rebuild=lambda msg: rebuilt.append(msg)
    )
    assert rebuilt and (art2.path / "data.bin").read_bytes() == b"x" * 1000
    verify(art2.path)


def test_failed_build_leaves_nothing(tmp_path):
    cache = Cache(tmp_path)

    def boom(d):
        (d / "partial").write_bytes(b"half")
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError):
        cache.get_or_build("t", {"v": 1}, boom)
    assert cache.lookup("t", {"v": 1}) is None
    assert [p for p in (tmp_path / "t").iterdir() if p.is_dir()] == []


def _slow_builder(root: str, marker_dir: str, q) -> None:
    cache = Cache(Path(root))

    def build(d: Path):
        (Path(marker_dir) / f"built-{mp.current_process().pid}").write_text("1")
        for i in range(20):
            (d / f"part{i}").write_bytes(bytes([i]) * 10_000)
            time.sleep(0.01)
        return {}

    art = cache.get_or_build("slow", {"v": 1}, build)
    verify(art.path)
    q.put(str(art.path))


def test_two_processes_do_not_corrupt_each_other(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_slow_builder, args=(str(tmp_path / "c"), str(markers), q)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    paths = {q.get(timeout=5), q.get(timeout=5)}
    assert len(paths) == 1
    assert len(list(markers.iterdir())) == 1  # the loser found the winner's artifact
    verify(Path(paths.pop()))
