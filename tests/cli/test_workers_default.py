"""The default --workers (issue 26): never slower than one worker on a small or busy machine. Workers only for
a large input file with idle cores to run them; bench/workers.py measures the ratios."""

from __future__ import annotations

import os

import pytest

from ppt.cli import common
from ppt.cli.common import AUTO_WORKERS_MIN_BYTES, auto_workers, spare_cores


@pytest.fixture
def big(tmp_path):
    f = tmp_path / "big.jsonl"
    with open(f, "wb") as fh:  # sparse: the size is what counts
        fh.truncate(AUTO_WORKERS_MIN_BYTES)
    return str(f)


def _load(monkeypatch, value: float) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (value, value, value))


def test_an_idle_machine_and_a_large_file_get_a_worker_per_idle_core(monkeypatch, big):
    _load(monkeypatch, 0.1)
    assert auto_workers(big, 8) == 8
    assert auto_workers(big, 2) == 2  # 1.9 idle cores: 2
    _load(monkeypatch, 3.0)
    assert auto_workers(big, 8) == 5


def test_a_busy_machine_gets_one(monkeypatch, big):
    _load(monkeypatch, 6.0)  # the shared 2-core machine of the report: load 3-10
    assert auto_workers(big, 2) == 1
    _load(monkeypatch, 0.8)
    assert auto_workers(big, 2) == 1  # 1.2 idle cores: the driving process needs one of them
    _load(monkeypatch, 7.0)
    assert auto_workers(big, 8) == 1


def test_small_inputs_stdin_and_a_gpu_get_one(monkeypatch, tmp_path, big):
    _load(monkeypatch, 0.0)
    small = tmp_path / "small.jsonl"
    small.write_text('{"text": "a"}\n' * 10)
    assert auto_workers(str(small), 16) == 1  # start-up would dominate
    assert auto_workers("-", 16) == 1  # a pipe: its size is not known
    assert auto_workers(str(tmp_path / "missing.jsonl"), 16) == 1
    assert auto_workers(str(tmp_path), 16) == 1  # not a regular file
    assert auto_workers(big, 1) == 1  # the pool's own default says 1: a mechanism on a GPU


def test_spare_cores_without_a_load_average(monkeypatch):
    def unknown():
        raise OSError("no load average here")

    monkeypatch.setattr(os, "getloadavg", unknown)
    assert spare_cores(4) == 4
    _load(monkeypatch, 9.0)
    assert spare_cores(4) == 0


def test_the_help_says_the_rule():
    from tests.helpers import ppt

    r = ppt("sanitize", "--help", env={"COLUMNS": "200"})
    text = " ".join(r.stdout.split())
    assert "8 MiB" in text and "spare cores" in text and "load average" in text
    assert common.AUTO_WORKERS_MIN_BYTES == 8 << 20
