"""The loopback OpenAI-compatible server: in-process over a tiny model, and `ppt serve` as a process,
on both transports (uvicorn+starlette and stdlib; see conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")
torch = pytest.importorskip("torch")

from ppt.lm.generate import LocalGenerator  # noqa: E402
from ppt.remote.server import ModelService, start_server  # noqa: E402
from tests.remote.conftest import STARTUP, ppt_serve_command  # noqa: E402

CHAT = {"model": "anything", "messages": [{"role": "user", "content": "The quick brown fox"}], "max_tokens": 6}


@pytest.fixture(scope="module")
def served(tiny_lm, transport):
    gen = LocalGenerator.load(str(tiny_lm), device="cpu", batch_size=8)
    service = ModelService(gen, "tiny", max_batch=8, max_wait_s=0.05)
    server, thread = start_server(service, "127.0.0.1", 0, transport=transport)
    assert server.transport == transport
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        yield service, client
    server.shutdown()
    server.server_close()
    service.close()
    thread.join(timeout=5)


def test_chat_and_completions_shapes(served):
    _, client = served
    r = client.post("/chat/completions", json=CHAT)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "chat.completion" and body["model"] == "tiny"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str)
    assert choice["finish_reason"] in ("stop", "length")
    assert body["usage"]["completion_tokens"] <= 6
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    r = client.post("/completions", json={"model": "m", "prompt": "The quick", "max_tokens": 4, "temperature": 0})
    assert r.status_code == 200 and r.json()["object"] == "text_completion"
    assert isinstance(r.json()["choices"][0]["text"], str)
    assert client.get("/models").json()["data"][0]["id"] == "tiny"
    assert httpx.get(str(client.base_url).removesuffix("/v1/") + "/health").json() == {"status": "ok"}


@pytest.mark.parametrize(
    ("path", "payload", "status"),
    [
        ("/chat/completions", b"{not json", 400),
        ("/chat/completions", {**CHAT, "stream": "yes"}, 400),
        ("/chat/completions", {**CHAT, "n": 99}, 400),
        ("/chat/completions", {"model": "m", "messages": []}, 400),
        ("/chat/completions", {**CHAT, "temperature": 5}, 400),
        ("/completions", {"model": "m", "prompt": "x", "max_tokens": 10**6}, 400),
        ("/embeddings", {"model": "m", "input": "x"}, 404),
    ],
)
def test_bad_requests_get_openai_errors(served, path, payload, status):
    _, client = served
    r = client.post(path, content=payload) if isinstance(payload, bytes) else client.post(path, json=payload)
    assert r.status_code == status
    assert set(r.json()["error"]) >= {"message", "type"}


def test_concurrent_requests_are_batched_and_seeds_are_batch_independent(served):
    service, client = served
    seeded = {**CHAT, "temperature": 1.0, "seed": 42}
    alone = client.post("/chat/completions", json=seeded).json()["choices"][0]["message"]["content"]
    before = len(service.batches)
    results: dict[int, str] = {}

    def call(i: int) -> None:
        body = (
            seeded
            if i == 0
            else {
                **CHAT,
                "messages": [{"role": "user", "content": f"prompt number {i}"}],
                "temperature": 1.0,
                "seed": 42,
            }
        )
        r = client.post("/chat/completions", json=body)
        results[i] = r.json()["choices"][0]["message"]["content"]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 6
    assert max(service.batches[before:]) > 1  # requests that arrived together were generated together
    assert results[0] == alone  # same seed, same answer, batched or not


@pytest.mark.slow(reason="a real ppt serve process, stopped by a signal")
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_ppt_serve_process(tiny_lm, tmp_path, transport, stop_signal):
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [
            *ppt_serve_command(transport),
            "serve",
            "--model",
            str(tiny_lm),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--device",
            "cpu",
            "--verbose",
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
        url = f"http://127.0.0.1:{int(port_file.read_text())}/v1"
        r = httpx.post(url + "/chat/completions", json={**CHAT, "model": str(tiny_lm)}, timeout=60)
        assert r.status_code == 200 and r.json()["choices"][0]["finish_reason"] in ("stop", "length")
        typo = httpx.post(url + "/chat/completions", json={**CHAT, "model": "gpt-4o"}, timeout=60)
        assert typo.status_code == 404 and typo.json()["error"]["code"] == "model_not_found"
        wrong_method = httpx.get(url + "/chat/completions", timeout=60)
        assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"
        keyed = httpx.get(url + "/models?api_key=sk-SECRET-KEY", timeout=60)  # P-m3: never in the log
        assert keyed.status_code == 200
        proc.send_signal(stop_signal)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err  # a clean stop on SIGTERM and on Ctrl-C
    assert f"({STARTUP[transport]}, " in err and "ppt: serve: stopped" in err
    assert out == ""  # nothing but JSONL on stdout, and a server writes none
    assert "The quick brown fox" not in err  # bodies are never logged
    assert '"POST /v1/chat/completions HTTP/1.1" 200' in err  # --verbose: request line and status only
    assert "sk-SECRET-KEY" not in err and "/v1/models?..." in err  # the path, never the query string
    assert "serving" in err or "on http://127.0.0.1" in err


def test_ppt_serve_bad_port_fails_cleanly(tiny_lm, transport):
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        env = {**os.environ, "PPT_QUIET": "1"}
        r = subprocess.run(
            [*ppt_serve_command(transport), "serve", "--model", str(tiny_lm), "--port", str(port), "--device", "cpu"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    assert r.returncode == 69 and "cannot bind" in r.stderr and r.stdout == ""


class _SlowGenerator:
    """Stands in for LocalGenerator: each generate call takes ``delay_s`` (0.6 s)."""

    name = "slow"

    def __init__(self, delay_s: float = 0.6):
        self.calls, self.delay_s = 0, delay_s

    def generate(self, prompts, params, generators):
        from ppt.lm.generate import Completion

        self.calls += 1
        time.sleep(self.delay_s)
        return [Completion("ok", 1, 1, "stop") for _ in prompts]


def test_requests_of_clients_that_left_are_never_generated(transport):
    import json
    import socket

    gen = _SlowGenerator()
    service = ModelService(gen, "slow", max_batch=1, max_wait_s=0.0)
    server, thread = start_server(service, "127.0.0.1", 0, transport=transport)
    try:
        busy = threading.Thread(target=lambda: httpx.post(server.base_url + "/chat/completions", json=CHAT, timeout=30))
        busy.start()
        time.sleep(0.2)  # the worker is now generating the first request
        body = json.dumps(CHAT).encode()
        with socket.create_connection(server.server_address[:2]) as s:  # a client that gives up at once
            s.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            time.sleep(0.1)
        busy.join(timeout=30)
        deadline = time.monotonic() + 10
        while service.dropped < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.8)
        assert service.dropped == 1 and gen.calls == 1
    finally:
        server.shutdown()
        server.server_close()
        service.close()


def test_shutdown_with_a_request_in_flight_is_prompt_and_the_client_gets_an_answer(transport):
    """Stopping never hangs on generation: uvicorn tells the waiting request (503, the server is
    shutting down) and finishes its graceful shutdown; stdlib stops accepting and the in-flight
    request is answered when its batch is done."""
    gen = _SlowGenerator(delay_s=1.5)
    service = ModelService(gen, "slow", max_batch=1, max_wait_s=0.0)
    server, thread = start_server(service, "127.0.0.1", 0, transport=transport)
    got: list = []

    def call() -> None:
        try:
            got.append(httpx.post(server.base_url + "/chat/completions", json=CHAT, timeout=30).status_code)
        except httpx.TransportError as e:
            got.append(type(e).__name__)

    client = threading.Thread(target=call)
    client.start()
    time.sleep(0.4)  # the request is being generated
    t0 = time.monotonic()
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)
    stopped_s = time.monotonic() - t0
    client.join(timeout=10)
    service.close()
    assert not thread.is_alive() and stopped_s < 4
    assert got == [503 if transport == "starlette" else 200]


def test_unknown_model_is_404_and_a_wrong_method_405_in_the_http_free_core():
    """Issue 26: `ppt serve` answered any model name with its own model, and GET on a POST route with 404."""
    import json

    from ppt.remote.api import answer, unrouted
    from ppt.testing import EchoService

    svc = EchoService()
    svc.served_names = frozenset({"smollm2"})
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    ok = answer(svc, "chat", json.dumps({**body, "model": "smollm2"}).encode())
    typo = answer(svc, "chat", json.dumps({**body, "model": "gpt-4o"}).encode())
    assert ok.status == 200 and typo.status == 404 and typo.body["error"]["code"] == "model_not_found"
    assert answer(EchoService(), "chat", json.dumps({**body, "model": "any"}).encode()).status == 200
    err, headers = unrouted("GET", "/v1/chat/completions")
    assert err.status == 405 and headers == {"Allow": "POST"}
    err, headers = unrouted("POST", "/v1/models")
    assert err.status == 405 and headers == {"Allow": "GET"}
    err, headers = unrouted("GET", "/v1/embeddings")
    assert err.status == 404 and headers == {}
