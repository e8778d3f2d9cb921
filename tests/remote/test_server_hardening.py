"""`ppt serve` hardening (issue 15): loopback only unless --allow-remote with a bearer token, socket
timeouts, a connection cap, truncated bodies refused, unknown roles and parameters refused.
Loopback only (127.0.0.1, ephemeral ports); every socket and process has a timeout. Each test runs on
both transports (uvicorn+starlette and stdlib; see conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

import pytest

httpx = pytest.importorskip("httpx")

from ppt.remote.api import MAX_BODY_BYTES  # noqa: E402
from ppt.remote.server import start_server  # noqa: E402
from ppt.testing import EchoService  # noqa: E402
from tests.remote.conftest import ppt_serve_command  # noqa: E402

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 3}


def serving(transport, service=None, **options):
    server, thread = start_server(service or EchoService(), "127.0.0.1", 0, transport=transport, **options)
    assert server.transport == transport
    return server, thread


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
def test_serve_refuses_a_non_loopback_host_without_allow_remote_and_a_token(tiny_lm, tmp_path, extra, transport):
    port_file = tmp_path / "port"
    try:
        r = subprocess.run(
            [
                *ppt_serve_command(transport),
                "serve",
                "--model",
                str(tiny_lm),
                "--host",
                "0.0.0.0",
                "--port",
                "0",
                "--port-file",
                str(port_file),
                "--device",
                "cpu",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("ppt serve --host 0.0.0.0 started listening")
    assert r.returncode == 2, r.stderr
    assert ("not a loopback address" if not extra else "requires --api-key-env") in r.stderr
    assert not port_file.exists()


@pytest.mark.slow(reason="a real ppt serve process")
def test_serve_with_api_key_env_requires_the_bearer_token_and_never_shows_it(tiny_lm, tmp_path, transport):
    token = "tok-DO-NOT-PRINT-8c1f"
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [
            *ppt_serve_command(transport),
            "serve",
            "--model",
            str(tiny_lm),
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--device",
            "cpu",
            "--api-key-env",
            "PPT_TEST_SERVE_KEY",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PPT_TEST_SERVE_KEY": token},
    )
    try:
        deadline = time.monotonic() + 90
        while not port_file.exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{int(port_file.read_text())}/v1"
        assert httpx.post(url + "/chat/completions", json=CHAT, timeout=30).status_code == 401
        assert httpx.get(url + "/models", headers={"Authorization": "Bearer wrong"}, timeout=30).status_code == 401
        ok = httpx.post(
            url + "/chat/completions",
            json={**CHAT, "model": str(tiny_lm)},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert ok.status_code == 200, ok.text
        assert httpx.get(url.removesuffix("/v1") + "/health", timeout=30).status_code == 200
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert token not in out + err


BODY = json.dumps(CHAT).encode()
HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


@pytest.mark.parametrize(
    ("stall", "sent"),
    [
        ("before the first byte", b""),
        ("in the headers", b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"),
        ("in the body", HEAD + b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY[:10]),
        ("idle after a response", b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"),
    ],
    ids=["nothing-sent", "headers", "body", "keep-alive"],
)
def test_a_silent_connection_is_closed_after_the_socket_timeout(transport, stall, sent):
    svc = EchoService()
    server, thread = serving(transport, svc, socket_timeout_s=0.5)
    try:
        with socket.create_connection(server.server_address[:2], timeout=5) as s:
            s.sendall(sent)  # then silence (slowloris)
            t0 = time.monotonic()
            data = read_reply(s, timeout=5)
            assert time.monotonic() - t0 < 4, f"the server kept a connection silent {stall} open"
            assert (b"200 OK" in data) == (stall == "idle after a response")  # the health check was answered
            assert svc.bodies == []
    finally:
        stop(server, thread)


def test_connections_beyond_the_cap_get_503_and_slots_come_back(transport):
    server, thread = serving(transport, max_connections=2, socket_timeout_s=5)
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


def test_a_half_closed_short_body_is_not_processed_as_complete(transport):
    svc = EchoService()
    server, thread = serving(transport, svc)
    body = json.dumps(CHAT).encode()
    try:
        with socket.create_connection(server.server_address[:2], timeout=5) as s:
            s.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body) + 40).encode() + b"\r\n\r\n" + body
            )
            s.shutdown(socket.SHUT_WR)
            reply = read_reply(s)
        assert reply.startswith(b"HTTP/1.1 400"), reply[:80]
        assert svc.bodies == []
    finally:
        stop(server, thread)


@pytest.mark.parametrize(
    "body",
    [
        {**CHAT, "messages": [{"role": "hacker", "content": "x"}]},
        {**CHAT, "messages": [{"role": "tool", "content": "x", "tool_call_id": "1"}]},
        {**CHAT, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
        {**CHAT, "presence_penalty": 0.5},
        {**CHAT, "frobnicate": 1},
    ],
)
def test_unknown_roles_and_unservable_parameters_are_refused(tiny_lm, body, transport):
    from ppt.lm.generate import LocalGenerator
    from ppt.remote.server import ModelService

    service = ModelService(LocalGenerator.load(str(tiny_lm), device="cpu"), "tiny")
    server, thread = serving(transport, service)
    try:
        r = httpx.post(server.base_url + "/chat/completions", json=body, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
        assert service.batches == []  # nothing was generated
    finally:
        stop(server, thread)
        service.close()


def test_the_cap_holds_two_connections_at_once(transport):
    """The cap is max_connections, not one less (uvicorn counts the connection asking)."""
    server, thread = serving(transport, max_connections=2, socket_timeout_s=5)
    try:
        with (
            socket.create_connection(server.server_address[:2], timeout=5) as a,
            socket.create_connection(server.server_address[:2], timeout=5) as b,
        ):
            for s in (a, b):
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert all(read_reply(s).startswith(b"HTTP/1.1 200") for s in (a, b))
    finally:
        stop(server, thread)


@pytest.mark.parametrize("declared", [MAX_BODY_BYTES + 1, 10**12])
def test_an_oversize_body_is_refused_before_it_is_read(transport, declared):
    svc = EchoService()
    server, thread = serving(transport, svc)
    try:
        with socket.create_connection(server.server_address[:2], timeout=5) as s:
            s.sendall(HEAD + b"Content-Length: " + str(declared).encode() + b"\r\n\r\n" + BODY)
            reply = read_reply(s)
        assert reply.startswith(b"HTTP/1.1 413"), reply[:80]
        assert b'"error"' in reply and svc.bodies == []
    finally:
        stop(server, thread)


def test_bodies_over_the_limit_are_refused_and_the_limit_itself_is_served(transport):
    """The limit is enforced on what arrives, not only on what is declared: a body one byte over is
    refused (413), one at the limit reaches the service."""
    limit = len(BODY) + 8
    svc = EchoService()
    server, thread = serving(transport, svc, max_body_bytes=limit)
    try:
        padded = BODY[:-1] + b" " * (limit - len(BODY)) + b"}"
        assert len(padded) == limit
        ok = httpx.post(
            server.base_url + "/chat/completions",
            content=padded,
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        assert ok.status_code == 200, ok.text
        big = httpx.post(
            server.base_url + "/chat/completions",
            content=padded + b" ",
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        assert big.status_code == 413 and big.json()["error"]["message"]
        assert len(svc.bodies) == 1
    finally:
        stop(server, thread)


def test_a_wrong_token_is_refused_before_the_body_is_read_and_without_echoing_it(transport):
    svc = EchoService()
    server, thread = serving(transport, svc, api_key="right-token")
    try:
        for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": "Basic right-token"}):
            r = httpx.post(server.base_url + "/chat/completions", json=CHAT, headers=headers, timeout=10)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
            assert "token" in r.json()["error"]["message"] and "wrong-token" not in r.text
        assert httpx.get(server.base_url.removesuffix("/v1") + "/health", timeout=10).status_code == 200
        assert svc.bodies == []
        ok = httpx.post(
            server.base_url + "/chat/completions",
            json=CHAT,
            headers={"Authorization": "Bearer right-token"},
            timeout=10,
        )
        assert ok.status_code == 200 and len(svc.bodies) == 1
    finally:
        stop(server, thread)


def test_chunked_bodies_are_refused_on_both_transports(transport):
    """Bodies are framed by Content-Length only: the stdlib transport cannot parse chunked bodies, so
    uvicorn, which could, refuses them too, with the same 411 (issue 29, P-m2; it used to serve them)."""
    svc = EchoService()
    server, thread = serving(transport, svc)

    def chunked(data: bytes):
        yield data[:10]
        yield data[10:]

    try:
        r = httpx.post(
            server.base_url + "/chat/completions",
            content=chunked(BODY),
            timeout=10,
            headers={"Content-Type": "application/json"},
        )
        assert r.status_code == 411 and "Content-Length" in r.json()["error"]["message"]
        assert svc.bodies == []
    finally:
        stop(server, thread)


def test_uvicorn_connections_have_tcp_nodelay():
    """Without TCP_NODELAY every small keep-alive reply waits for the client's delayed ACK (~40 ms per
    request; bench/query.py measured 20 req/s instead of 240). asyncio sets it only on sockets made with
    proto IPPROTO_TCP, so the transport's own bind() must make them so."""
    pytest.importorskip("uvicorn")
    import asyncio

    from ppt.remote.http_uvicorn import bind

    async def accepted_nodelay() -> int:
        got: asyncio.Future = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport):
                got.set_result(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=bind("127.0.0.1", 0))
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        value = await asyncio.wait_for(got, 5)
        writer.close()
        server.close()
        return value

    assert asyncio.run(accepted_nodelay()) != 0


def test_oversize_headers_are_refused(transport):
    from ppt.remote.api import MAX_HEADER_BYTES

    svc = EchoService()
    server, thread = serving(transport, svc)
    try:
        with socket.create_connection(server.server_address[:2], timeout=5) as s:
            s.sendall(
                HEAD
                + b"X-Pad: "
                + b"a" * (MAX_HEADER_BYTES + 1)
                + b"\r\nContent-Length: "
                + str(len(BODY)).encode()
                + b"\r\n\r\n"
                + BODY
            )
            reply = read_reply(s)
        assert reply[:12] in (b"HTTP/1.1 400", b"HTTP/1.0 431", b"HTTP/1.1 431"), reply[:80]
        assert svc.bodies == []
    finally:
        stop(server, thread)


@pytest.mark.parametrize("host", ["::1", "localhost"])
def test_ipv6_and_named_loopback_hosts(transport, host):
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        server, thread = start_server(EchoService(), host, 0, transport=transport)
    except OSError as e:
        pytest.skip(f"cannot bind {host}: {e}")
    try:
        assert httpx.get(server.base_url + "/models", timeout=10).json()["data"][0]["id"] == "echo"
    finally:
        stop(server, thread)


def test_requests_while_the_model_loads_get_503_not_a_crash(transport):
    """`ppt serve` binds before it loads the model (a taken port fails at once): until the service is
    set, model routes answer 503 with Retry-After and health stays up."""
    server, thread = start_server(None, "127.0.0.1", 0, transport=transport)
    try:
        for r in (
            httpx.get(server.base_url + "/models", timeout=10),
            httpx.post(server.base_url + "/chat/completions", json=CHAT, timeout=10),
        ):
            assert (
                r.status_code == 503 and r.headers["retry-after"] == "5" and "loading" in r.json()["error"]["message"]
            )
        assert httpx.get(server.base_url.removesuffix("/v1") + "/health", timeout=10).status_code == 200
        server.service = EchoService()
        assert httpx.post(server.base_url + "/chat/completions", json=CHAT, timeout=10).status_code == 200
    finally:
        stop(server, thread)


def test_many_messages_or_a_huge_prompt_are_refused_before_the_model_thread():
    """P-m5 (issue 29): one 8 MB request of ~289k empty chat messages tied up the model thread 5-50 s while it
    was rendered and tokenized. The bounds are checked while the request is parsed, in milliseconds."""
    import time

    from ppt.remote.backends import MAX_MESSAGES, MAX_PROMPT_CHARS, parse_request

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="messages per request"):
        parse_request({"model": "m", "messages": [{"role": "user", "content": ""}] * 289_000}, "chat")
    with pytest.raises(ValueError, match="characters"):
        parse_request({"model": "m", "messages": [{"role": "user", "content": "x" * (MAX_PROMPT_CHARS + 1)}]}, "chat")
    with pytest.raises(ValueError, match="characters"):
        parse_request({"model": "m", "prompt": "x" * (MAX_PROMPT_CHARS + 1)}, "completions")
    assert time.perf_counter() - t0 < 1.0
    ok = parse_request({"model": "m", "messages": [{"role": "user", "content": "hi"}] * MAX_MESSAGES}, "chat")
    assert len(ok.prompt) == MAX_MESSAGES
