"""ppt.stages.dpopt: endpoint evaluation reads echoed prompt logprobs past the forward prefix."""

from __future__ import annotations

import json

import httpx
import pytest

from ppt.io import ExitCode, PptError
from ppt.stages.dpopt import _endpoint_logprobs


def _mock(monkeypatch, handler):
    from ppt.remote import client as rc

    orig = rc.HttpBackend.__init__

    def init(self, *a, **k):
        orig(self, *a, **k)
        self.client = httpx.Client(transport=httpx.MockTransport(handler))

    monkeypatch.setattr(rc.HttpBackend, "__init__", init)


def test_label_logprobs_from_echoed_prompt(monkeypatch):
    seen = []

    def handler(request):
        body = json.loads(request.content)
        seen.append(body)
        prefix, label = body["prompt"].rsplit(" ", 1)
        score = {"negative": -2.0, "positive": -0.5}[label]
        # prompt tokens: the prefix (two pieces), then the label in two pieces past the prefix
        return httpx.Response(
            200,
            json={
                "choices": [
                    {
                        "text": body["prompt"],
                        "logprobs": {
                            "text_offset": [0, 5, len(prefix), len(prefix) + 3],
                            "token_logprobs": [None, -9.0, score, -0.25],
                        },
                    }
                ]
            },
        )

    _mock(monkeypatch, handler)
    lp = _endpoint_logprobs("http://127.0.0.1:9/v1", "m", "Classify.", ["one", "two"], ["negative", "positive"])
    assert lp.tolist() == [[-2.25, -0.75], [-2.25, -0.75]]
    assert seen[0]["echo"] is True and seen[0]["max_tokens"] == 0 and seen[0]["model"] == "m"


@pytest.mark.parametrize(
    "response", [httpx.Response(404, json={}), httpx.Response(200, json={"choices": [{"text": ""}]})]
)
def test_endpoint_without_logprobs_is_unavailable(monkeypatch, response):
    _mock(monkeypatch, lambda request: response)
    with pytest.raises(PptError) as e:
        _endpoint_logprobs("http://127.0.0.1:9/v1", None, "Classify.", ["one"], ["a", "b"])
    assert e.value.exit_code == ExitCode.UNAVAILABLE
