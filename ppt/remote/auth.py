"""Endpoint addresses and credentials for the HTTP client: base-URL validation and redaction, and the
API key, read from the environment only (``--api-key-env NAME``, or ``OPENAI_API_KEY`` for the default
OpenAI endpoint alone: a custom base URL never gets a key the user did not name)."""

from __future__ import annotations

import ipaddress
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
    """Validate and normalise a base URL (no trailing slash); PptError (usage) when unusable.

    The endpoint path is appended to it, so a query string or fragment (which would end up before the
    path) is refused, as are credentials in the URL (keys come from the environment only)."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise PptError(
            "--base-url is not a valid URL", ExitCode.USAGE, hint="e.g. --base-url http://127.0.0.1:8000/v1"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PptError(
            f"--base-url must be an http(s) URL with a host (got {redact_url(url) or url[:40]!r})",
            ExitCode.USAGE,
            hint="e.g. --base-url http://127.0.0.1:8000/v1",
        )
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise PptError(
            f"--base-url must not have a query string or fragment ({redact_url(url)}?...): ppt appends "
            "/chat/completions or /completions to its path",
            ExitCode.USAGE,
            hint="pass the base path only, e.g. --base-url https://host/v1; keys go in the environment "
            "(--api-key-env NAME)",
        )
    if parts.username is not None or parts.password is not None:
        raise PptError(
            f"--base-url must not carry credentials ({redact_url(url)})",
            ExitCode.USAGE,
            hint="put the key in an environment variable and pass --api-key-env NAME",
        )
    return url.rstrip("/")


def is_loopback_host(host: str) -> bool:
    """True when ``host`` (a name or an address literal, brackets allowed) is this machine's loopback:
    ``localhost``, 127.0.0.0/8, ``::1`` or an IPv4-mapped loopback. Other names never count."""
    host = host.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")
    if host == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(addr, "ipv4_mapped", None)
    return bool(addr.is_loopback or (mapped is not None and mapped.is_loopback))


def is_loopback(url: str) -> bool:
    """True when the URL's host is a loopback address (parsed, not a prefix test)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    return bool(host) and is_loopback_host(host)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_env_name(name: str, option: str = "--api-key-env") -> None:
    if not _ENV_NAME.fullmatch(name):
        raise PptError(
            f"{option} takes the NAME of an environment variable, not a key",
            ExitCode.USAGE,
            hint=f"export MY_KEY=... then pass {option} MY_KEY",
        )


def env_not_set_message(name: str, option: str = "--api-key-env") -> str:
    """Says which variable is missing without echoing the option's value: a key pasted there by
    mistake can look like a variable name (``SK_PROJ_ABC123...``)."""
    return f"the environment variable named by {option} is not set or empty ({len(name)}-character name)"


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
        check_env_name(api_key_env)
        key = os.environ.get(api_key_env, "").strip()
        if not key and required:
            raise PptError(
                env_not_set_message(api_key_env),
                ExitCode.CONFIG,
                hint="export it before running ppt query (pass the variable's NAME, never the key)",
            )
        return key or None
    if is_openai(base_url):
        key = os.environ.get("OPENAI_API_KEY", "").strip()
        if not key and required:
            raise PptError(
                "the OpenAI API needs a key and OPENAI_API_KEY is not set",
                ExitCode.CONFIG,
                hint="export OPENAI_API_KEY=..., or name another variable with --api-key-env NAME",
            )
        return key or None
    return None
