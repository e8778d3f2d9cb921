"""`ppt serve` hardening (issue 15): loopback only unless --allow-remote with a bearer token, socket
timeouts, a connection cap, truncated bodies refused, unknown roles and parameters refused.
Loopback only (127.0.0.1, ephemeral ports); every socket and process has a timeout."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

httpx = pytest.importorskip("httpx")

from ppt.remote.server import start_server  # noqa: E402
from ppt.testing import EchoService  # noqa: E402

PPT = [shutil.which("ppt")] if shutil.which("ppt") else [sys.executable, "-m", "ppt.cli.main"]
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 3}


def serving(service=None, **options):
    return start_server(service or EchoService(), "127.0.0.1", 0, **options)


def stop(server, thread):
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def read_reply(sock: socket.socket, timeout: float = 5.0) -> bytes:
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.parametrize("extra", [[], ["--allow-remote"]])
def test_serve_refuses_a_non_loopback_host_without_allow_remote_and_a_token(tiny_lm, tmp_path, extra):
    port_file = tmp_path / "port"
    try:
        r = subprocess.run([*PPT, "serve", "--model", str(tiny_lm), "--host", "0.0.0.0", "--port", "0",
                            "--port-file", str(port_file), "--device", "cpu", *extra],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("ppt serve --host 0.0.0.0 started listening")
    assert r.returncode == 2, r.stderr
    assert ("not a loopback address" if not extra else "requires --api-key-env") in r.stderr
    assert not port_file.exists()


def test_serve_with_api_key_env_requires_the_bearer_token_and_never_shows_it(tiny_lm, tmp_path):
    token = "tok-DO-NOT-PRINT-8c1f"
    port_file = tmp_path / "port"
    proc = subprocess.Popen([*PPT, "serve", "--model", str(tiny_lm), "--port", "0", "--port-file", str(port_file),
                             "--device", "cpu", "--api-key-env", "PPT_TEST_SERVE_KEY"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PPT_TEST_SERVE_KEY": token})
    try:
        deadline = time.monotonic() + 90
        while not port_file.exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{int(port_file.read_text())}/v1"
        assert httpx.post(url + "/chat/completions", json=CHAT, timeout=30).status_code == 401
        assert httpx.get(url + "/models", headers={"Authorization": "Bearer wrong"}, timeout=30).status_code == 401
        ok = httpx.post(url + "/chat/completions", json=CHAT, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert ok.status_code == 200, ok.text
        assert httpx.get(url.removesuffix("/v1") + "/health", timeout=30).status_code == 200
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert token not in out + err


def test_a_silent_connection_is_closed_after_the_socket_timeout():
    server, thread = serving(socket_timeout_s=0.5)
    try:
        with socket.create_connection(server.server_address[:2], timeout=5) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")  # headers never finished
            t0 = time.monotonic()
            data = read_reply(s, timeout=5)
            assert time.monotonic() - t0 < 4, "the server kept a silent connection open"
            assert b"200 OK" not in data
    finally:
        stop(server, thread)


def test_connections_beyond_the_cap_get_503_and_slots_come_back():
    server, thread = serving(max_connections=2, socket_timeout_s=5)
    idle = []
    try:
        for _ in range(2):
            idle.append(socket.create_connection(server.server_address[:2], timeout=5))
        time.sleep(0.3)  # both accepted and holding their slots
        with socket.create_connection(server.server_address[:2], timeout=5) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_reply(s).startswith(b"HTTP/1.1 503")
        for s in idle:
            s.close()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            r = httpx.get(server.base_url.removesuffix("/v1") + "/health", timeout=5)
            if r.status_code == 200:
                break
            time.sleep(0.1)
        assert r.status_code == 200
    finally:
        for s in idle:
            s.close()
        stop(server, thread)


def test_a_half_closed_short_body_is_not_processed_as_complete():
    svc = EchoService()
    server, thread = serving(svc)
    body = json.dumps(CHAT).encode()
    try:
        with socket.create_connection(server.server_address[:2], timeout=5) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(len(body) + 40).encode() + b"\r\n\r\n" + body)
            s.shutdown(socket.SHUT_WR)
            reply = read_reply(s)
        assert reply.startswith(b"HTTP/1.1 400"), reply[:80]
        assert svc.bodies == []
    finally:
        stop(server, thread)


@pytest.mark.parametrize("body", [
    {**CHAT, "messages": [{"role": "hacker", "content": "x"}]},
    {**CHAT, "messages": [{"role": "tool", "content": "x", "tool_call_id": "1"}]},
    {**CHAT, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
    {**CHAT, "presence_penalty": 0.5},
    {**CHAT, "frobnicate": 1},
])
def test_unknown_roles_and_unservable_parameters_are_refused(tiny_lm, body):
    from ppt.lm.generate import LocalGenerator
    from ppt.remote.server import ModelService

    service = ModelService(LocalGenerator.load(str(tiny_lm), device="cpu"), "tiny")
    server, thread = serving(service)
    try:
        r = httpx.post(server.base_url + "/chat/completions", json=body, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
        assert service.batches == []  # nothing was generated
    finally:
        stop(server, thread)
        service.close()
