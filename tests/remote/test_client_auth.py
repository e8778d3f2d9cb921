"""Endpoint addresses and keys on the client side (issue 15): loopback is parsed, not prefix-matched;
a --base-url with a query string is refused clearly; a key pasted into --api-key-env is never echoed."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ppt.io import ExitCode, PptError
from ppt.remote.auth import check_base_url, is_loopback, resolve_api_key
from tests.helpers import PPT  # noqa: E402


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://127.9.8.7/v1",
        "http://localhost:1/v1",
        "http://[::1]:8000/v1",
        "http://[::ffff:127.0.0.1]:80/v1",
        "http://LOCALHOST/v1",
    ],
)
def test_loopback_addresses(url):
    assert is_loopback(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.evil.example.com/v1",
        "http://127.0.0.1.nip.io/v1",
        "http://localhost.evil.example.com/v1",
        "http://10.0.0.1/v1",
        "http://[::2]/v1",
        "http://0.0.0.0:8000/v1",
        "http://1270.0.0.1/v1",
        "http:///v1",
    ],
)
def test_names_that_merely_start_like_loopback_are_not(url):
    assert not is_loopback(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1?api-version=2024",
        "http://127.0.0.1:8000/v1#frag",
        "http://127.0.0.1:8000/v1?",
        "https://user:pw@host.example/v1",
    ],
)
def test_base_url_with_query_fragment_or_credentials_is_refused_clearly(url):
    with pytest.raises(PptError) as e:
        check_base_url(url)
    assert e.value.exit_code == ExitCode.USAGE
    assert "pw" not in str(e.value) and "2024" not in str(e.value)


def test_base_url_query_string_is_a_usage_error_not_a_misleading_404():
    r = subprocess.run(
        [*PPT, "query", "--model", "m", "--allow-raw", "--base-url", "http://127.0.0.1:9/v1?x=1"],
        input=json.dumps({"id": 1, "text": "hi"}) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "query string" in r.stderr and "404" not in r.stderr


KEY_LIKE = "SK_PROJ_4F9A8B7C6D5E4F3A2B1C0D9E8F7A6B5C"


def test_a_key_passed_to_api_key_env_is_never_echoed(monkeypatch):
    monkeypatch.delenv(KEY_LIKE, raising=False)
    with pytest.raises(PptError) as e:
        resolve_api_key(KEY_LIKE, "http://127.0.0.1:9/v1")
    assert e.value.exit_code == ExitCode.CONFIG
    assert KEY_LIKE not in str(e.value) + str(e.value.hint or "")
    env = {k: v for k, v in os.environ.items() if k != KEY_LIKE}
    r = subprocess.run(
        [
            *PPT,
            "query",
            "--model",
            "m",
            "--allow-raw",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key-env",
            KEY_LIKE,
        ],
        input=json.dumps({"id": 1, "text": "hi"}) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 78 and "--api-key-env" in r.stderr
    assert KEY_LIKE not in r.stderr + r.stdout and KEY_LIKE[:12] not in r.stderr
