"""`ppt serve`'s server with the official `openai` Python SDK as the client (issue 15): logprobs,
streaming (server-sent events) and n > 1 are served, never silently ignored; bearer tokens enforced.
Loopback only (127.0.0.1, ephemeral ports), a tiny random model, on both transports (conftest.py)."""

from __future__ import annotations

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("torch")

from ppt.lm.generate import LocalGenerator  # noqa: E402
from ppt.remote.server import ModelService, start_server  # noqa: E402
from ppt.testing import EchoService  # noqa: E402

MSG = [{"role": "user", "content": "The quick brown fox"}]


@pytest.fixture(scope="module")
def server(tiny_lm, transport):
    gen = LocalGenerator.load(str(tiny_lm), device="cpu", batch_size=8)
    service = ModelService(gen, "tiny", max_batch=8, max_wait_s=0.02)
    srv, thread = start_server(service, "127.0.0.1", 0, transport=transport)
    yield srv
    srv.shutdown()
    srv.server_close()
    service.close()
    thread.join(timeout=5)


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=60)


def test_models_chat_completions_usage(client):
    assert [m.id for m in client.models.list()] == ["tiny"]
    r = client.chat.completions.create(model="tiny", messages=MSG, max_tokens=4, temperature=0, seed=1)
    assert r.choices[0].message.role == "assistant" and isinstance(r.choices[0].message.content, str)
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    r = client.completions.create(model="tiny", prompt="The quick", max_tokens=4, temperature=0)
    assert isinstance(r.choices[0].text, str) and r.choices[0].logprobs is None


def test_completions_logprobs_k(client):
    r = client.completions.create(model="tiny", prompt="The quick brown fox", max_tokens=5, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    assert lp is not None and lp.tokens, "logprobs were requested and must not come back null"
    assert "".join(lp.tokens) == r.choices[0].text
    assert len(lp.token_logprobs) == len(lp.tokens) == len(lp.top_logprobs) == len(lp.text_offset)
    assert all(x <= 0 for x in lp.token_logprobs)
    assert all(1 <= len(top) <= 3 and all(v <= 0 for v in top.values()) for top in lp.top_logprobs)


def test_chat_logprobs_and_top_logprobs(client):
    r = client.chat.completions.create(
        model="tiny", messages=MSG, max_tokens=5, temperature=0, logprobs=True, top_logprobs=2
    )
    content = r.choices[0].logprobs.content
    assert content and "".join(t.token for t in content) == r.choices[0].message.content
    assert all(len(t.top_logprobs) == 2 and t.logprob <= 0 for t in content)
    # greedy decoding: the chosen token is the most likely one wherever tokenization round-trips
    assert max(t.logprob for t in content[0].top_logprobs) >= content[0].logprob - 1e-4
    r = client.chat.completions.create(model="tiny", messages=MSG, max_tokens=3, temperature=0, logprobs=True)
    assert r.choices[0].logprobs.content and r.choices[0].logprobs.content[0].top_logprobs == []


def test_streaming_chat_and_completions_match_the_plain_answer(client):
    plain = client.chat.completions.create(model="tiny", messages=MSG, max_tokens=6, temperature=0)
    chunks = list(
        client.chat.completions.create(
            model="tiny", messages=MSG, max_tokens=6, temperature=0, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == plain.choices[0].finish_reason
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == plain.usage.completion_tokens
    plain = client.completions.create(model="tiny", prompt="The quick", max_tokens=5, temperature=0)
    streamed = client.completions.create(model="tiny", prompt="The quick", max_tokens=5, temperature=0, stream=True)
    assert "".join(c.choices[0].text for c in streamed) == plain.choices[0].text


def test_n_choices_seeded_and_counted(client):
    kw = dict(model="tiny", messages=MSG, max_tokens=5, temperature=1.0, seed=7, n=3)
    a = client.chat.completions.create(**kw)
    b = client.chat.completions.create(**kw)
    assert [c.index for c in a.choices] == [0, 1, 2]
    assert [c.message.content for c in a.choices] == [c.message.content for c in b.choices]
    assert len({c.message.content for c in a.choices}) > 1  # independent samples, not one answer copied
    assert a.usage.completion_tokens <= 15
    one = client.chat.completions.create(**{**kw, "n": 1})
    assert one.choices[0].message.content == a.choices[0].message.content  # choice 0 is the n=1 answer
    streamed = list(client.chat.completions.create(**{**kw, "n": 2}, stream=True))
    assert {c.choices[0].index for c in streamed if c.choices} == {0, 1}


def test_unservable_requests_are_refused_not_ignored(client, server, transport):
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="tiny", messages=MSG, max_tokens=3, presence_penalty=0.5)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="tiny", messages=MSG, max_tokens=3, n=99)
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model="tiny", prompt="x", max_tokens=3, logprobs=9)
    # a service that cannot compute logprobs or several choices refuses them
    echo_srv, thread = start_server(EchoService(), "127.0.0.1", 0, transport=transport)
    try:
        echo = openai.OpenAI(base_url=echo_srv.base_url, api_key="x", max_retries=0, timeout=30)
        with pytest.raises(openai.BadRequestError):
            echo.chat.completions.create(model="e", messages=MSG, logprobs=True)
        with pytest.raises(openai.BadRequestError):
            echo.completions.create(model="e", prompt="hi there", n=2)
        streamed = list(echo.chat.completions.create(model="e", messages=MSG, stream=True))
        assert "".join(c.choices[0].delta.content or "" for c in streamed).startswith("echo ")
    finally:
        echo_srv.shutdown()
        echo_srv.server_close()
        thread.join(timeout=5)


def test_bearer_token_with_the_sdk(transport):
    srv, thread = start_server(EchoService(), "127.0.0.1", 0, api_key="test-token-123", transport=transport)
    try:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=srv.base_url, api_key="wrong", max_retries=0, timeout=30).models.list()
        good = openai.OpenAI(base_url=srv.base_url, api_key="test-token-123", max_retries=0, timeout=30)
        assert [m.id for m in good.models.list()] == ["echo"]
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)
