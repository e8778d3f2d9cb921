"""Cache reliability (issue 15): bad or read-only PPT_CACHE, stale build directories, bad manifests,
cheap load checks with honest corruption detection."""

from __future__ import annotations

import builtins
import errno
import fcntl
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import ppt.cache.hashing as cache_mod  # the module whose sha256_file the checks call
from ppt.cache import MANIFEST, Cache, CorruptArtifact, artifact_key, verify
from ppt.io import ExitCode, PptError
from tests.helpers import ppt

BIG = getattr(cache_mod, "SMALL_FILE", 4 << 20) * 2  # a "big" file: loads take the fingerprint path


def _write(d: Path, payload: bytes = b"x" * 1000) -> dict:
    (d / "data.bin").write_bytes(payload)
    return {"n": len(payload)}


def _big(d: Path) -> dict:
    (d / "data.bin").write_bytes(bytes(range(256)) * (BIG // 256))
    return {}


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# ---- bad or read-only PPT_CACHE ----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["a-file", "under-a-file"])
def test_bad_ppt_cache_is_exit_78_with_a_hint(tmp_path, where):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    bad = f if where == "a-file" else f / "cache"
    r = ppt("cache", "ls", env={"PPT_CACHE": str(bad)})
    assert r.returncode == ExitCode.CONFIG, r.stderr
    assert "Traceback" not in r.stderr and "hint:" in r.stderr and "PPT_CACHE" in r.stderr
    r = ppt(
        "sanitize",
        "-m",
        "santext+",
        "-e",
        "3",
        "--space",
        "glove-6b-50d:2000",
        "--quiet",
        stdin='{"text": "the river"}\n',
        env={"PPT_CACHE": str(bad)},
    )
    assert r.returncode == ExitCode.CONFIG and "Traceback" not in r.stderr, r.stderr


class ReadOnly:
    """Every write under ``root`` fails with EROFS, as on a read-only mount (root ignores chmod)."""

    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def __init__(self, root: Path, monkeypatch):
        self.root = str(Path(root).resolve())
        self.attempts: list[str] = []
        real_open, real_os_open = builtins.open, os.open

        def under(path) -> bool:
            try:
                return os.path.abspath(os.fspath(path)).startswith(self.root)
            except TypeError:
                return False

        def refuse(path):
            self.attempts.append(str(path))
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

        def os_open(path, flags, *a, **k):
            if under(path) and flags & self.WRITE_FLAGS:
                refuse(path)
            return real_os_open(path, flags, *a, **k)

        def py_open(file, mode="r", *a, **k):
            if not isinstance(file, int) and under(file) and any(c in mode for c in "wax+"):
                refuse(file)
            return real_open(file, mode, *a, **k)

        def guard(fn):
            def wrapped(path, *a, **k):
                if under(path):
                    refuse(path)
                return fn(path, *a, **k)

            return wrapped

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(builtins, "open", py_open)
        monkeypatch.setattr(io, "open", py_open)
        for name in ("mkdir", "unlink", "rmdir", "replace", "rename", "utime"):
            monkeypatch.setattr(os, name, guard(getattr(os, name)))


def test_read_only_cache_hit_takes_no_lock_and_writes_nothing(tmp_path, monkeypatch):
    cache = Cache(tmp_path / "c")
    small = cache.get_or_build("t", {"v": 1}, _write)
    big = cache.get_or_build("t", {"v": 2}, _big)
    ro = ReadOnly(tmp_path / "c", monkeypatch)
    cache = Cache(tmp_path / "c")
    assert cache.get_or_build("t", {"v": 1}, _write).path == small.path
    assert cache.get_or_build("t", {"v": 2}, _big).path == big.path
    assert cache.lookup("t", {"v": 2}) is not None
    assert ro.attempts == []


def test_read_only_cache_miss_is_exit_78_naming_the_artifact(tmp_path, monkeypatch):
    Cache(tmp_path / "c").get_or_build("t", {"v": 1}, _write)
    ReadOnly(tmp_path / "c", monkeypatch)
    with pytest.raises(PptError) as e:
        Cache(tmp_path / "c").get_or_build("t", {"v": 9}, _write)
    assert e.value.exit_code == ExitCode.CONFIG and "not writable" in e.value.message
    assert artifact_key("t", {"v": 9}) in e.value.message and "PPT_CACHE" in e.value.hint


def test_full_disk_while_building_is_exit_74(tmp_path):
    def full(d: Path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(PptError) as e:
        Cache(tmp_path).get_or_build("t", {"v": 1}, full)
    assert e.value.exit_code == ExitCode.IOERR and "no space" in e.value.message
    assert [p for p in (tmp_path / "t").iterdir() if p.is_dir()] == []


def test_an_errno_less_write_error_while_building_is_exit_74(tmp_path):
    """Reliability probe P-D5: numpy raises an OSError without errno when the disk fills mid-array; it was a
    traceback with exit 1."""

    def short_write(d: Path):
        raise OSError("Failed to write 4096 bytes")

    with pytest.raises(PptError) as e:
        Cache(tmp_path).get_or_build("t", {"v": 1}, short_write)
    assert e.value.exit_code == ExitCode.IOERR and "a write failed" in e.value.message and "disk" in e.value.hint
    assert [p for p in (tmp_path / "t").iterdir() if p.is_dir()] == []


def _can_mount_read_only() -> bool:
    if not shutil.which("unshare") or sys.platform != "linux":
        return False
    d = tempfile.mkdtemp()
    try:
        r = subprocess.run(
            ["unshare", "-m", "sh", "-c", f"mount --bind {d} {d} && mount -o remount,bind,ro {d} && ! touch {d}/f"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        return r.returncode == 0
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.skipif(not _can_mount_read_only(), reason="needs unshare -m and bind mounts (a real read-only mount)")
@pytest.mark.slow(reason="real ppt processes under unshare on a read-only bind mount, and a glove space build")
def test_prebuilt_cache_mounted_read_only_serves_sanitize(tmp_cache):
    args = ["sanitize", "-m", "santext+", "-e", "3", "--space", "glove-6b-50d:2000", "--quiet"]
    r = ppt(*args, stdin='{"text": "the river near the town"}\n')
    assert r.returncode == 0, r.stderr
    before = {p: p.stat().st_mtime_ns for p in tmp_cache.rglob("*")}
    script = f'mount --bind {tmp_cache} {tmp_cache} && mount -o remount,bind,ro {tmp_cache} && exec "$@"'

    def ro_ppt(*a, stdin=""):
        from tests.helpers import PPT

        return subprocess.run(
            ["unshare", "-m", "sh", "-c", script, "sh", *PPT, *a],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    r = ro_ppt(*args, stdin='{"text": "the river near the town"}\n')
    assert r.returncode == 0, r.stderr
    assert _jsonl(r.stdout)[0]["ppt"]["sanitize"]["signature"].startswith("santext+|")
    for sub in (["cache", "ls", "--json"], ["cache", "verify"]):
        r = ro_ppt(*sub)
        assert r.returncode == 0, r.stderr
    r = ro_ppt(*args[:4], "1.5", *args[5:], stdin='{"text": "the river"}\n')  # SanText+ needs no table per eps
    assert r.returncode == 0, r.stderr
    r = ro_ppt("sanitize", "-m", "custext+", *args[3:], stdin='{"text": "the river"}\n')  # tables it lacks
    assert r.returncode == ExitCode.CONFIG and "not writable" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert {p: p.stat().st_mtime_ns for p in tmp_cache.rglob("*")} == before


# ---- stale build directories -------------------------------------------------------------------------

_KILLED_BUILD = """
import sys, time
from pathlib import Path
from ppt.cache import Cache

def build(d):
    (d / "part").write_bytes(b"half")
    print("building", flush=True)
    time.sleep(60)

Cache(Path(sys.argv[1])).get_or_build("t", {"v": 1}, build)
"""


def _killed_build(root: Path) -> Path:
    """Run a build in a subprocess and kill -9 it midway, as a killed `ppt precompute` does."""
    p = subprocess.Popen(
        [sys.executable, "-c", _KILLED_BUILD, str(root)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert p.stdout.readline().strip() == "building"
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    (left,) = [d for d in (root / "t").iterdir() if d.is_dir()]
    assert left.name.startswith(".")
    return left


def _ls(root: Path) -> list[dict]:
    r = ppt("cache", "ls", "--json", env={"PPT_CACHE": str(root)})
    assert r.returncode == 0, r.stderr
    return _jsonl(r.stdout)


def test_killed_build_is_listed_and_removed_by_cache_rm_stale(tmp_cache):
    left = _killed_build(tmp_cache)
    rows = _ls(tmp_cache)
    assert [(r["path"], r["state"]) for r in rows] == [(str(left), "stale-build")]
    r = ppt("cache", "rm", "stale")
    assert r.returncode == 0 and "1 stale build directory" in r.stderr, r.stderr
    assert not left.exists()


def test_killed_build_is_removed_by_cache_rm_all(tmp_cache):
    left = _killed_build(tmp_cache)
    Cache(tmp_cache).get_or_build("t", {"v": 2}, _write)
    r = ppt("cache", "rm", "all", "--yes")
    assert r.returncode == 0, r.stderr
    assert not left.exists() and _ls(tmp_cache) == []


def test_killed_build_is_reclaimed_by_the_rebuild(tmp_path):
    left = _killed_build(tmp_path)
    art = Cache(tmp_path).get_or_build("t", {"v": 1}, _write)
    assert not left.exists()
    assert [d.name for d in (tmp_path / "t").iterdir() if d.is_dir()] == [art.key]


def test_live_build_is_listed_as_building_and_kept(tmp_cache):
    key = artifact_key("t", {"v": 1})
    (tmp_cache / "t").mkdir()
    live = tmp_cache / "t" / f".{key}.abc123"
    live.mkdir()
    with open(tmp_cache / "t" / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a live builder (another open file: flock conflicts within a process too)
        assert [r["state"] for r in _ls(tmp_cache)] == ["building"]
        r = ppt("cache", "rm", "all", "--yes")
        assert r.returncode == 0 and "in use by a live build" in r.stderr
        assert live.exists()
    assert [r["state"] for r in _ls(tmp_cache)] == ["stale-build"]


# ---- bad manifests -----------------------------------------------------------------------------------

BAD_MANIFESTS = {
    "unparseable": b'{"files": {"data.bin": ',
    "not-utf8": b"\xff\xfe{}",
    "a-list": b"[]",
    "files-not-object": b'{"files": 3}',
    "entry-not-object": b'{"files": {"data.bin": 1000}}',
    "no-sha": b'{"files": {"data.bin": {"size": 1000}}}',
    "size-a-string": json.dumps({"files": {"data.bin": {"size": "1000", "sha256": "0" * 64}}}).encode(),
    "meta-a-list": json.dumps({"files": {}, "meta": []}).encode(),
    "escapes": json.dumps({"files": {"../../etc/passwd": {"size": 1, "sha256": "0" * 64}}}).encode(),
}


@pytest.mark.parametrize("bad", list(BAD_MANIFESTS))
def test_bad_manifest_is_a_miss_listed_bad_and_removable(tmp_cache, bad):
    cache = Cache(tmp_cache)
    art = cache.get_or_build("t", {"v": 1}, _write)
    (art.path / MANIFEST).write_bytes(BAD_MANIFESTS[bad])
    with pytest.raises(CorruptArtifact):
        verify(art.path)
    assert cache.lookup("t", {"v": 1}) is None
    assert [r["state"] for r in _ls(tmp_cache)] == ["bad-manifest"]
    r = ppt("cache", "ls")
    assert r.returncode == 0 and "bad manifest" in r.stdout, r.stderr
    r = ppt("cache", "verify")
    assert r.returncode == 1 and "CORRUPT" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = ppt("cache", "rm", "bad")
    assert r.returncode == 0 and "removed 1 artifact" in r.stderr, r.stderr
    assert not art.path.exists()
    (tmp_cache / "t" / art.key).mkdir()  # the damage again, this time repaired by a load: a rebuild
    (tmp_cache / "t" / art.key / MANIFEST).write_bytes(BAD_MANIFESTS[bad])
    rebuilt = []
    art2 = cache.get_or_build("t", {"v": 1}, lambda d: rebuilt.append(1) or _write(d))
    assert rebuilt == [1] and verify(art2.path)["meta"] == {"n": 1000}


# ---- cheap load checks, honest corruption detection --------------------------------------------------


@pytest.fixture
def hashes(monkeypatch):
    """Count full-file sha256 computations."""
    calls: list[Path] = []
    real = cache_mod.sha256_file

    def counting(path):
        calls.append(Path(path))
        return real(path)

    monkeypatch.setattr(cache_mod, "sha256_file", counting)
    return calls


def test_loads_do_not_rehash_big_files(tmp_path, hashes):
    cache = Cache(tmp_path)
    cache.get_or_build("t", {"v": 1}, _big)
    assert len(hashes) == 1  # the build's full sha256, read back from disk
    hashes.clear()
    for _ in range(3):
        assert Cache(tmp_path).get_or_build("t", {"v": 1}, _big).meta == {}
        assert Cache(tmp_path).lookup("t", {"v": 1}) is not None
    assert hashes == []


def test_manifest_without_fingerprints_is_hashed_once_then_recorded(tmp_path, hashes):
    art = Cache(tmp_path).get_or_build("t", {"v": 1}, _big)
    m = json.loads((art.path / MANIFEST).read_bytes())
    for info in m["files"].values():  # a manifest written before fingerprints
        del info["fp"], info["mtime_ns"]
    del m["verified"]
    (art.path / MANIFEST).write_text(json.dumps(m))
    hashes.clear()
    assert Cache(tmp_path).lookup("t", {"v": 1}) is not None
    assert len(hashes) == 1
    assert Cache(tmp_path).lookup("t", {"v": 1}).content_hash == art.content_hash
    assert len(hashes) == 1


def test_ppt_cache_verify_full_env_hashes_every_load(tmp_path, hashes, monkeypatch):
    Cache(tmp_path).get_or_build("t", {"v": 1}, _big)
    hashes.clear()
    monkeypatch.setenv("PPT_CACHE_VERIFY", "full")
    Cache(tmp_path).lookup("t", {"v": 1})
    assert len(hashes) == 1


def _flip_middle(f: Path, keep_mtime: bool) -> None:
    st = f.stat()
    with open(f, "r+b") as fh:
        fh.seek(st.st_size // 2 + 12345)  # away from the sampled blocks
        b = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([b[0] ^ 0x01]))
    if keep_mtime:
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_bit_flip_in_the_middle_is_caught_by_cache_verify(tmp_cache):
    art = Cache(tmp_cache).get_or_build("t", {"v": 1}, _big)
    _flip_middle(art.file("data.bin"), keep_mtime=True)  # bit rot: size and mtime unchanged
    r = ppt("cache", "verify")
    assert r.returncode == 1 and "CORRUPT" in r.stderr and "sha256" in r.stderr, r.stderr
    r = ppt("cache", "verify", "--fix")
    assert r.returncode == 1 and "removed" in r.stderr
    rebuilt = []
    Cache(tmp_cache).get_or_build("t", {"v": 1}, lambda d: rebuilt.append(1) or _big(d))
    assert rebuilt == [1]
    assert ppt("cache", "verify").returncode == 0


def test_rewritten_file_is_caught_by_a_load(tmp_path):
    art = Cache(tmp_path).get_or_build("t", {"v": 1}, _big)
    p = art.file("data.bin")
    _flip_middle(p, keep_mtime=False)  # written in place: the mtime moves, the load re-hashes
    st = p.stat()  # a rewrite within the same second: move the mtime as a later write would (no sleep)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    assert Cache(tmp_path).lookup("t", {"v": 1}) is None


@pytest.mark.parametrize("where", ["head", "tail"])
def test_damage_in_the_sampled_blocks_is_caught_by_a_load(tmp_path, where):
    art = Cache(tmp_path).get_or_build("t", {"v": 1}, _big)
    f = art.file("data.bin")
    st = f.stat()
    with open(f, "r+b") as fh:
        fh.seek(10 if where == "head" else st.st_size - 10)
        fh.write(b"\0")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert Cache(tmp_path).lookup("t", {"v": 1}) is None


def test_truncated_file_is_caught_by_every_load(tmp_path, hashes):
    art = Cache(tmp_path).get_or_build("t", {"v": 1}, _big)
    f = art.file("data.bin")
    st = f.stat()
    os.truncate(f, st.st_size - 1)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    hashes.clear()
    assert Cache(tmp_path).lookup("t", {"v": 1}) is None
    assert Cache(tmp_path).lookup("t", {"v": 1}, deep=False) is None
    assert hashes == []  # caught by its size, without hashing


def test_obsolete_santext_tables_are_listed_and_removable(tmp_cache):
    """The former per-eps SanText tables (1.4-1.6 GB each on glove-6b-50d) are read by nothing now:
    `ppt cache ls` says so and `ppt cache rm obsolete` removes them, nothing else."""
    cache = Cache(tmp_cache)
    old = cache.get_or_build("santext-table", {"eps": 3.0}, _write)
    keep = cache.get_or_build("t", {"v": 1}, _write)
    assert {(r["kind"], r["state"], r["complete"]) for r in _ls(tmp_cache)} == {
        ("santext-table", "obsolete", True),
        ("t", "ok", True),
    }
    r = ppt("cache", "ls")
    assert r.returncode == 0 and "OBSOLETE" in r.stdout, r.stderr
    r = ppt("cache", "rm", "obsolete")
    assert r.returncode == 0 and "removed 1 artifact" in r.stderr, r.stderr
    assert not old.path.exists() and keep.path.exists()
