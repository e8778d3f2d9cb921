"""Endpoint addresses and credentials for the HTTP client: base-URL validation and redaction, and the
API key, read from the environment only (``--api-key-env NAME``, or ``OPENAI_API_KEY`` for the default
OpenAI endpoint alone: a custom base URL never gets a key the user did not name)."""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

from ppt.io import ExitCode, PptError

OPENAI_BASE_URL = "https://api.openai.com/v1"


def redact_url(url: str) -> str:
    """The URL without credentials, query or fragment (what stamps and messages may show)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_base_url(url: str) -> str:
    """Validate and normalise a base URL (no trailing slash); PptError (usage) when unusable."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PptError(f"--base-url must be an http(s) URL with a host (got {redact_url(url) or url[:40]!r})",
                       ExitCode.USAGE, hint="e.g. --base-url http://127.0.0.1:8000/v1")
    return url


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHOWABLE_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")


def default_base_url() -> str:
    return os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL


def is_openai(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" and (parts.hostname or "").lower() == "api.openai.com"


def resolve_api_key(api_key_env: str | None, base_url: str, *, required: bool = True) -> str | None:
    """The key to send, read from the environment only.

    ``--api-key-env NAME`` -> ``$NAME`` (must be set). Without it, ``$OPENAI_API_KEY`` is used only
    for the default OpenAI endpoint; a custom base URL gets no key unless the user names a variable.
    """
    if api_key_env is not None:
        if not _ENV_NAME.fullmatch(api_key_env):
            raise PptError("--api-key-env takes the NAME of an environment variable, not a key", ExitCode.USAGE,
                           hint="export MY_KEY=... then pass --api-key-env MY_KEY")
        key = os.environ.get(api_key_env, "").strip()
        if not key and required:
            shown = api_key_env if _SHOWABLE_ENV_NAME.fullmatch(api_key_env) else "named by --api-key-env"
            raise PptError(f"environment variable {shown} is not set or empty", ExitCode.CONFIG,
                           hint="export it before running ppt query")
        return key or None
    if is_openai(base_url):
        key = os.environ.get("OPENAI_API_KEY", "").strip()
        if not key and required:
            raise PptError("the OpenAI API needs a key and OPENAI_API_KEY is not set", ExitCode.CONFIG,
                           hint="export OPENAI_API_KEY=..., or name another variable with --api-key-env NAME")
        return key or None
    return None
