"""The same malformed requests get the same answers on both `ppt serve` transports (issue 29, P-m2).

Each case's raw bytes go to a uvicorn+starlette server and a stdlib server, and both must answer the
status the case expects, with the same Content-Type, Allow and JSON body: what the request line and
headers decide comes from ``ppt.remote.framing`` on both, and each parser's own errors are mapped onto
it. Before, the probe found 431/414/411/505/501 (HTML pages) on stdlib where uvicorn answered 200/400/404.
"""

from __future__ import annotations

import json
import socket
import time

import orjson
import pytest

from ppt.remote.server import starlette_available, start_server
from ppt.testing import EchoService

KEY = "parity-key"
AUTH = b"Authorization: Bearer " + KEY.encode() + b"\r\n"
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}).encode()
CL = b"Content-Length: " + str(len(BODY)).encode() + b"\r\n"
CHAT = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + AUTH


def get(target: bytes, *extra: bytes, method: bytes = b"GET", version: bytes = b"HTTP/1.1") -> bytes:
    return method + b" " + target + b" " + version + b"\r\nHost: x\r\n" + AUTH + b"".join(extra) + b"\r\n"


def chunked_body() -> bytes:
    return hex(len(BODY))[2:].encode() + b"\r\n" + BODY + b"\r\n0\r\n\r\n"


# name: (request pieces, expected status); pieces are sent 0.1 s apart, None half-closes the connection
CASES: dict[str, tuple[list[bytes | None], int]] = {
    "101 headers": ([get(b"/v1/models", *(b"X-H%d: v\r\n" % i for i in range(101)))], 431),
    "70 KB request target": ([get(b"/v1/models?q=" + b"a" * 70_000)], 414),
    "70 KB request target, in pieces": ([b"GET /v1/models?q=" + b"a" * 40_000, b"a" * 30_000 + b" HTTP/1.1\r\n"], 414),
    "10 KB request target": ([get(b"/v1/models?q=" + b"a" * 10_000)], 414),
    "70 KB of headers, in pieces": ([get(b"/v1/models")[:-2] + b"X-Pad: " + b"a" * 40_000, b"a" * 30_000], 431),
    "POST without Content-Length": ([CHAT + b"\r\n"], 411),
    "chunked body": ([CHAT + b"Transfer-Encoding: chunked\r\n\r\n" + chunked_body()], 411),
    "Content-Length and Transfer-Encoding": ([CHAT + CL + b"Transfer-Encoding: chunked\r\n\r\n" + chunked_body()], 411),
    "Transfer-Encoding gzip": ([CHAT + b"Transfer-Encoding: gzip\r\n\r\n"], 411),
    "Content-Length +N": ([CHAT + b"Content-Length: +" + str(len(BODY)).encode() + b"\r\n\r\n" + BODY], 400),
    "Content-Length with _": ([CHAT + b"Content-Length: 1_0\r\n\r\n" + BODY[:10]], 400),
    "conflicting Content-Lengths": ([CHAT + CL + b"Content-Length: 3\r\n\r\n" + BODY], 400),
    "NUL in a header value": ([get(b"/v1/models", b"X-A: a\x00b\r\n")], 400),
    "space in a header name": ([get(b"/v1/models", b"Bad Header: x\r\n")], 400),
    "no Host": ([b"GET /v1/models HTTP/1.1\r\n" + AUTH + b"\r\n"], 400),
    "two Hosts": ([get(b"/v1/models", b"Host: y\r\n")], 400),
    "garbage request line": ([b"HELLO\r\n\r\n"], 400),
    "bad version": ([get(b"/v1/models", version=b"HTTX/1.1")], 400),
    "HTTP/0.9": ([b"GET /v1/models\r\n\r\n"], 400),
    "HTTP/2.0": ([get(b"/v1/models", version=b"HTTP/2.0")], 505),
    "//v1/completions": ([get(b"//v1/chat/completions", CL, b"\r\n" + BODY, method=b"POST")[:-2]], 404),
    "percent-encoded path": ([get(b"/v1/chat%2Fcompletions", CL, b"\r\n" + BODY, method=b"POST")[:-2]], 404),
    "OPTIONS": ([get(b"/v1/chat/completions", method=b"OPTIONS")], 405),
    "PUT": ([get(b"/v1/chat/completions", CL, b"\r\n" + BODY, method=b"PUT")[:-2]], 405),
    "DELETE": ([get(b"/v1/models", method=b"DELETE")], 405),
    "HEAD": ([get(b"/health", method=b"HEAD")], 405),
    "HEAD unknown path": ([get(b"/nope", method=b"HEAD")], 404),
    "unknown method": ([get(b"/v1/models", method=b"FROB")], 405),
    "GET unknown path": ([get(b"/v1/nope")], 404),
    "declared body over the limit": ([CHAT + b"Content-Length: 99999999\r\n\r\n"], 413),
    "body shorter than its Content-Length": ([CHAT + CL + b"\r\n" + BODY[:-5], None], 400),
    "not JSON": ([CHAT + b"Content-Length: 5\r\n\r\nhello"], 400),
    "wrong token with Expect: 100-continue": (
        [CHAT.replace(KEY.encode(), b"wrong") + CL + b"Expect: 100-continue\r\n\r\n"],
        401,
    ),
    "a good request": ([CHAT + CL + b"Connection: close\r\n\r\n" + BODY], 200),
}


@pytest.fixture(scope="module")
def servers():
    running = {}
    for transport in ("starlette", "stdlib"):
        if transport == "starlette" and not starlette_available():
            continue
        running[transport] = start_server(EchoService(), "127.0.0.1", 0, transport=transport, api_key=KEY)
    yield {name: server for name, (server, _) in running.items()}
    for server, thread in running.values():
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def exchange(server, pieces: list[bytes | None], method: bytes) -> dict:
    """Send the pieces, read one response (skipping a 100 Continue); its status, headers and body."""
    with socket.create_connection(server.server_address[:2], timeout=5) as s:
        for i, piece in enumerate(pieces):
            if i:
                time.sleep(0.1)
            try:
                s.shutdown(socket.SHUT_WR) if piece is None else s.sendall(piece)
            except OSError:
                break  # the server answered and closed before the rest was sent
        data = b""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep and head.startswith(b"HTTP/1.1 100"):
                data = rest
                continue
            if sep:
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
                length = 0 if method == b"HEAD" else int(headers.get("content-length", "0"))
                if len(rest) >= length:
                    return {"status": int(lines[0].split()[1]), "headers": headers, "body": rest[:length]}
            try:
                chunk = s.recv(65536)
            except (ConnectionError, TimeoutError):
                chunk = b""
            if not chunk:
                break
            data += chunk
    raise AssertionError(f"no whole response: {data[:200]!r}")


@pytest.mark.parametrize("case", list(CASES))
def test_both_transports_answer_a_request_alike(servers, case):
    pieces, expected = CASES[case]
    method = (pieces[0] or b"").split(b" ", 1)[0]
    got = {name: exchange(server, pieces, method) for name, server in servers.items()}
    for name, r in got.items():
        assert r["status"] == expected, (name, r)
        if expected != 200:
            assert r["headers"].get("content-type") == "application/json", (name, r)
            if method != b"HEAD":
                assert orjson.loads(r["body"])["error"]["message"], (name, r)
    if len(got) == 2:
        a, b = got["starlette"], got["stdlib"]
        for key in ("content-type", "allow", "retry-after", "www-authenticate"):
            assert a["headers"].get(key) == b["headers"].get(key), (key, a, b)
        if expected != 200:  # a 200's body carries a fresh id and timestamp
            assert a["body"] == b["body"], (a["body"], b["body"])
