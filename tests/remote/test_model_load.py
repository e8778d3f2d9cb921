"""Requests sent while `ppt serve` or `ppt snd serve` loads its model get 503 "loading" at once (issue 29,
P-m4): the servers bind, then answer from a background thread while the model loads. Before, the bound
socket was not served until the model was in, so a request hung for the whole load.

The model load is slowed by 3 s in the server process (a wrapper around the loader), so the window is
certain; the port is picked beforehand, since --port-file is written only once the model is in.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

httpx = pytest.importorskip("httpx")

LOAD_DELAY_S = 3.0

_SLOW_SERVE = """
import sys, time
if {no_uvicorn}:
    sys.modules['uvicorn'] = None
import ppt.lm.door as door
real = door.get_lm
def slow(*a, **k):
    time.sleep({delay})
    return real(*a, **k)
door.get_lm = slow
from ppt.cli.main import run
sys.argv[0] = 'ppt'
run()
"""

_SLOW_SND = """
import sys, time, types
from ppt.snd.split import SplitModel
def slow(*a, **k):
    time.sleep({delay})
    return types.SimpleNamespace(name='stub', hash='0' * 12, max_length=8)
SplitModel.load = staticmethod(slow)
from ppt.cli.main import run
sys.argv[0] = 'ppt'
run()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, limit_s: float = 90) -> None:
    deadline = time.monotonic() + limit_s
    while True:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.05)


def stop(proc: subprocess.Popen) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err


@pytest.mark.slow(reason="a real ppt serve process with a delayed model load")
def test_ppt_serve_answers_503_while_the_model_loads(tiny_lm, tmp_path, transport):
    port, port_file = free_port(), tmp_path / "port"
    code = _SLOW_SERVE.format(no_uvicorn=transport == "stdlib", delay=LOAD_DELAY_S)
    args = ["serve", "--model", str(tiny_lm), "--port", str(port), "--port-file", str(port_file), "--device", "cpu"]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_listening(port, proc)
        url = f"http://127.0.0.1:{port}"
        t0 = time.monotonic()
        r = httpx.get(url + "/v1/models", timeout=2)  # before the fix: a hang until the model was in
        assert time.monotonic() - t0 < 1.5
        assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
        assert "loading" in r.json()["error"]["message"]
        post = httpx.post(url + "/v1/completions", json={"model": "m", "prompt": "hi"}, timeout=2)
        assert post.status_code == 503
        assert httpx.get(url + "/health", timeout=2).status_code == 200
        assert not port_file.exists()  # written once the model is in: scripts wait for it
        deadline = time.monotonic() + 90
        while not port_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        assert httpx.get(url + "/v1/models", timeout=10).status_code == 200
    finally:
        rc, err = stop(proc)
    assert rc == 0, err


@pytest.mark.slow(reason="a real ppt snd serve process with a delayed model load")
def test_ppt_snd_serve_answers_503_while_the_model_loads(tmp_path):
    port, port_file = free_port(), tmp_path / "port"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _SLOW_SND.format(delay=LOAD_DELAY_S),
            "snd",
            "serve",
            "--port",
            str(port),
            "--port-file",
            str(port_file),
            "--device",
            "cpu",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_listening(port, proc)
        url = f"http://127.0.0.1:{port}"
        r = httpx.get(url + "/v1/snd/info", timeout=2)
        assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
        post = httpx.post(url + "/v1/snd/embed", content=b'{"inputs": []}', timeout=2)
        assert post.status_code == 503
        assert httpx.get(url + "/health", timeout=2).status_code == 200
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        rc, err = stop(proc)
    assert rc == 0, err
    assert "ppt: snd serve: stopped" in err
