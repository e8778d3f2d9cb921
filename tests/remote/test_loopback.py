"""ppt.testing.loopback injects the same faults on both transports: a scripted status with
Retry-After, a connection dropped without a response, a delay; then normal answers."""

from __future__ import annotations

import time

import pytest

httpx = pytest.importorskip("httpx")

from ppt.testing import EchoService, Fault, FaultPlan, loopback  # noqa: E402

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 3}


def test_faults_are_injected_in_order_then_answers_are_normal(transport):
    svc = EchoService()
    plan = FaultPlan([Fault(status=429, retry_after=0.5), Fault(drop=True), Fault(delay_s=0.4)])
    with loopback(svc, plan, transport=transport) as (server, url):
        assert server.transport == transport
        with httpx.Client(timeout=10) as client:
            r = client.post(url + "/chat/completions", json=CHAT, headers={"X-Probe": "1"})
            assert (
                r.status_code == 429 and r.headers["retry-after"] == "0.5" and r.json()["error"]["type"] == "injected"
            )
            with pytest.raises(httpx.TransportError):
                client.post(url + "/chat/completions", json=CHAT)
            t0 = time.monotonic()
            r = client.post(url + "/chat/completions", json=CHAT)
            assert r.status_code == 200 and time.monotonic() - t0 >= 0.4
            assert client.post(url + "/chat/completions", json=CHAT).status_code == 200
    assert plan.injected == {"429": 1, "drop": 1, "delay": 1} and plan.seen == 4
    assert plan.headers[0]["x-probe"] == "1"
    assert len(svc.bodies) == 2  # faulted requests never reached the service


def test_loopback_auto_prefers_starlette_when_installed():
    from ppt.remote.server import starlette_available

    with loopback(EchoService()) as (server, _):
        assert server.transport == ("starlette" if starlette_available() else "stdlib")
