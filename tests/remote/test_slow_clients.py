"""Slow clients (issue 29, P-D2): ``--timeout`` is a deadline for the whole request (request line, headers
and body), not a silence timer re-armed by every byte, and one client address cannot hold every slot.

Each test runs on both transports of `ppt serve` (uvicorn+starlette and stdlib; see conftest.py) and on
`ppt snd serve`'s server. Loopback only: the other client addresses are 127.0.0.2 and 127.0.0.3 (Linux
routes all of 127.0.0.0/8 to the loopback device). Deadlines are 0.6 s, so each test takes about a second.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")

from ppt.remote.server import start_server  # noqa: E402
from ppt.remote.snd import start_snd_server  # noqa: E402
from ppt.testing import EchoService  # noqa: E402

DEADLINE_S = 0.6
TRICKLE_S = 0.15  # never silent for as long as a quarter of the deadline
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 3}).encode()
POST_HEAD = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: " + str(len(BODY)).encode() + b"\r\n"
)
SND_BODY = b'{"inputs": []}' + b" " * 40
SND_HEAD = b"POST /v1/snd/embed HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(SND_BODY)).encode() + b"\r\n"
HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
HEALTH_CLOSE = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


@pytest.fixture(params=["starlette", "stdlib", "snd"])
def kind(request) -> str:
    if request.param == "starlette":
        from ppt.remote.server import starlette_available

        if not starlette_available():
            pytest.skip("uvicorn/starlette not installed (pip install 'ppt-private-prompts[serve]')")
    return request.param


@contextlib.contextmanager
def serving(kind: str, **options):
    """A server of ``kind`` on 127.0.0.1 with a 0.6 s request deadline; yields it."""
    options.setdefault("socket_timeout_s", DEADLINE_S)
    if kind == "snd":
        server, thread = start_snd_server(None, "127.0.0.1", 0, **options)
    else:
        server, thread = start_server(EchoService(), "127.0.0.1", 0, transport=kind, **options)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def connect(server, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(server.server_address[:2], timeout=5, source_address=(source, 0))


def receive(sock: socket.socket, wait_s: float) -> tuple[bytes, bool]:
    """What the server sends within ``wait_s``, and whether it closed the connection by then."""
    got = b""
    end = time.monotonic() + wait_s
    while (left := end - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], left)
        if not readable:
            break
        try:
            chunk = sock.recv(65536)
        except ConnectionError:
            return got, True
        if not chunk:
            return got, True
        got += chunk
    return got, False


def closed_by_server(sock: socket.socket, wait_s: float) -> bytes | None:
    """What the server sent before closing, if it closes within ``wait_s``; None while it stays open."""
    got, closed = receive(sock, wait_s)
    return got if closed else None


def trickle(
    sock: socket.socket, data: bytes, every_s: float = TRICKLE_S, max_s: float = 4 * DEADLINE_S
) -> float | None:
    """Send ``data`` one byte every ``every_s`` (cycling) for up to ``max_s``; the seconds until the
    server closed the connection, or None when it was still open at the end."""
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < max_s:
        try:
            sock.sendall(data[i % len(data) : i % len(data) + 1])
        except ConnectionError:
            return time.monotonic() - t0
        i += 1
        if closed_by_server(sock, every_s) is not None:
            return time.monotonic() - t0
    return None


def snd_or_serve(kind: str, serve: bytes, snd: bytes) -> bytes:
    return snd if kind == "snd" else serve


@pytest.mark.parametrize("phase", ["headers", "body", "keep-alive"])
def test_a_client_trickling_bytes_is_cut_at_the_request_deadline(kind, phase):
    """Before the fix the silence timer was re-armed by every byte: a byte every 0.15 s held the
    connection for the whole 4 s (and, in the probe, forever)."""
    head = snd_or_serve(kind, POST_HEAD, SND_HEAD)
    with serving(kind) as server, connect(server) as s:
        if phase == "headers":
            data = head + b"X-Pad: " + b"a" * 1000
        elif phase == "body":
            s.sendall(head + b"\r\n")
            data = snd_or_serve(kind, BODY, SND_BODY)[:-1]  # never the last byte
        else:  # a whole request answered, then the next one trickled: the deadline restarts at the answer
            s.sendall(HEALTH)
            reply, closed = receive(s, 0.2)
            assert reply.startswith(b"HTTP/1.1 200") and not closed  # answered, kept alive
            data = head + b"X-Pad: " + b"a" * 1000
        took = trickle(s, data)
        assert took is not None, f"a client trickling its {phase} was never cut off"
        assert took < DEADLINE_S + 1.0, f"cut after {took:.2f} s with a {DEADLINE_S} s deadline"


def test_a_steady_request_within_the_deadline_is_answered(kind):
    """The deadline cuts only what is too slow: a request sent in pieces over half the deadline is served."""
    with serving(kind) as server, connect(server) as s:
        request = snd_or_serve(kind, POST_HEAD + b"Connection: close\r\n\r\n" + BODY, HEALTH_CLOSE)
        for i in range(0, len(request), len(request) // 5 + 1):
            s.sendall(request[i : i + len(request) // 5 + 1])
            time.sleep(DEADLINE_S / 10)
        reply = closed_by_server(s, 2) or b""
        assert reply.startswith(b"HTTP/1.1 200"), reply[:80]


def test_an_unauthenticated_trickling_client_is_cut_and_a_wrong_token_never_waits_for_the_body(kind):
    """With a bearer token required, a client without one is cut at the deadline too, and one that sends
    complete headers with a wrong token is answered 401 at once, its body never awaited."""
    head = snd_or_serve(kind, POST_HEAD, SND_HEAD)
    with serving(kind, api_key="right-token") as server:
        with connect(server) as s:
            assert trickle(s, head + b"X-Pad: " + b"a" * 1000) is not None
        with connect(server) as s:
            t0 = time.monotonic()
            s.sendall(head + b"Authorization: Bearer wrong-token\r\n\r\n")  # then no body at all
            reply = closed_by_server(s, 3 * DEADLINE_S)
            assert reply is not None and reply.startswith(b"HTTP/1.1 401"), reply
            assert time.monotonic() - t0 < DEADLINE_S / 2


def test_one_address_cannot_take_every_slot(kind):
    """Over its per-client cap an address is answered 503 at once; other addresses are still served, and
    the slow ones are cut at the deadline, which frees their slots."""
    with serving(kind, max_connections=4, max_client_connections=2) as server:
        slow = [connect(server, "127.0.0.2") for _ in range(2)]
        try:
            for s in slow:
                s.sendall(b"GET /hea")  # incomplete: holds a slot
            time.sleep(0.2)
            with connect(server, "127.0.0.2") as third:
                third.sendall(HEALTH)
                refused = closed_by_server(third, 2)
            assert refused is not None and refused.startswith(b"HTTP/1.1 503"), refused
            assert b"Retry-After: 1" in refused or b"retry-after: 1" in refused
            assert b"too many connections from this client" in refused
            for source in ("127.0.0.1", "127.0.0.3"):
                with connect(server, source) as s:
                    s.sendall(HEALTH_CLOSE)
                    reply = closed_by_server(s, 2)
                assert reply is not None and reply.startswith(b"HTTP/1.1 200"), (source, reply)
            # the slow pair is cut at the deadline, and their address gets in again
            assert all(closed_by_server(s, DEADLINE_S + 1) is not None for s in slow)
            with connect(server, "127.0.0.2") as s:
                s.sendall(HEALTH_CLOSE)
                reply = closed_by_server(s, 2)
            assert reply is not None and reply.startswith(b"HTTP/1.1 200"), reply
        finally:
            for s in slow:
                s.close()


def test_the_total_cap_still_holds_across_addresses(kind):
    with serving(kind, max_connections=2, max_client_connections=2) as server:
        held = [connect(server, "127.0.0.2"), connect(server, "127.0.0.3")]
        try:
            time.sleep(0.2)
            with connect(server) as s:
                s.sendall(HEALTH)
                refused = closed_by_server(s, 2)
            assert refused is not None and refused.startswith(b"HTTP/1.1 503"), refused
            assert b"too many connections" in refused
        finally:
            for s in held:
                s.close()


def test_many_trickling_clients_do_not_take_the_server_offline(kind):
    """The probe's scenario: as many trickling clients as --max-connections. Spread over two addresses
    with a per-client cap of half the slots, then cut at the deadline: a normal client is served within
    about one deadline, where before it got 503 for as long as they trickled."""
    stop = threading.Event()
    with serving(kind, max_connections=4, max_client_connections=2) as server:
        loris = [connect(server, src) for src in ("127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3")]

        def drip() -> None:
            while not stop.is_set():
                for s in loris:
                    with contextlib.suppress(OSError):
                        s.send(b"a" if s.fileno() != -1 else b"")
                stop.wait(TRICKLE_S)

        for s in loris:
            s.sendall(b"GET /health HTTP/1.1\r\nX-Pad: ")
        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()
        try:
            t0 = time.monotonic()
            served_after = None
            while time.monotonic() - t0 < 3 * DEADLINE_S:
                try:
                    r = httpx.get(server.base_url.removesuffix("/v1") + "/health", timeout=2)
                except httpx.HTTPError:
                    r = None
                if r is not None and r.status_code == 200:
                    served_after = time.monotonic() - t0
                    break
                time.sleep(0.1)
            assert served_after is not None, "trickling clients kept the server offline"
        finally:
            stop.set()
            dripper.join(timeout=2)
            for s in loris:
                s.close()


def test_the_per_client_cap_defaults_to_every_slot_on_loopback_and_a_quarter_when_exposed():
    from ppt.cli.serving import client_cap

    assert client_cap("127.0.0.1", 64, None) == 64  # every client of a loopback server is this machine
    assert client_cap("::1", 32, None) == 32
    assert client_cap("0.0.0.0", 64, None) == 16  # --allow-remote: one address gets a quarter of the slots
    assert client_cap("0.0.0.0", 2, None) == 1
    assert client_cap("0.0.0.0", 64, 100) == 64 and client_cap("127.0.0.1", 64, 3) == 3


@pytest.mark.parametrize("command", [["serve"], ["snd", "serve"]])
def test_the_limits_are_documented_in_help(command):
    from typer.testing import CliRunner

    from ppt.cli.main import app

    r = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "--max-client-connections" in text and "a whole request" in text


@pytest.mark.slow(reason="a real ppt serve process and trickling clients")
def test_ppt_serve_cuts_a_trickling_client_and_caps_one_address(tiny_lm, tmp_path, transport):
    """The flags end to end: `ppt serve --timeout 1 --max-client-connections 1`."""
    import subprocess

    from tests.remote.conftest import ppt_serve_command

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
            "--timeout",
            "1",
            "--max-client-connections",
            "1",
            "-q",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not port_file.exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        address = ("127.0.0.1", int(port_file.read_text()))
        with socket.create_connection(address, timeout=5, source_address=("127.0.0.2", 0)) as held:
            held.sendall(b"GET /hea")
            time.sleep(0.2)
            with socket.create_connection(address, timeout=5, source_address=("127.0.0.2", 0)) as s:
                s.sendall(HEALTH)
                refused = closed_by_server(s, 2)
            assert refused is not None and refused.startswith(b"HTTP/1.1 503"), refused
            with socket.create_connection(address, timeout=5) as s:
                took = trickle(s, POST_HEAD + b"X-Pad: " + b"a" * 1000)
            assert took is not None and took < 2.5, took
        proc.terminate()
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
