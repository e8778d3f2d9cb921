"""What `ppt serve` answers from a request's line and headers alone, before any body is read, without HTTP.

Both transports parse HTTP with their own code (h11 under uvicorn, ``http.server`` in the fallback), and
parsers disagree at the edges: one accepts what the other refuses, and each has its own error pages. So
each transport hands the parsed request line and headers to ``decide_head`` and its parser's own errors
to ``protocol_error`` (stdlib) or ``h11_error`` (uvicorn), and sends what they return: the same status,
headers and JSON body for the same bytes on either transport (issue 29, P-m2). In order:

1. framing: HTTP/1.x only (505); a request line over ``MAX_REQUEST_LINE`` (414); more than
   ``MAX_HEADERS`` headers or ``MAX_HEADER_BYTES`` of them (431); control characters in a header, an
   illegal header name, a missing or repeated Host (400); any Transfer-Encoding (411: bodies are framed
   by Content-Length only);
2. the route, matched on the raw target (no percent-decoding, no merging of slashes); health needs no token;
3. the bearer token (401), checked before any body is read;
4. the model still loading (503 with Retry-After);
5. a method or path no route takes (405 with Allow, or 404);
6. for a POST, its Content-Length: missing (411), malformed or conflicting (400), too large (413).

Every error closes the connection when a body may follow unread.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ppt.remote.api import (
    LOADING,
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    UNAUTHORIZED_HEADERS,
    check_bearer,
    route,
    unrouted,
)
from ppt.remote.service import ServiceError

MAX_REQUEST_LINE = 8190  # bytes of "METHOD target HTTP/1.1"
MAX_HEADERS = 100

MALFORMED = ServiceError(400, "malformed HTTP request")
TARGET_TOO_LONG = ServiceError(414, f"request line longer than {MAX_REQUEST_LINE} bytes")
HEADERS_TOO_LARGE = ServiceError(
    431, f"request headers larger than {MAX_HEADER_BYTES} bytes or more than {MAX_HEADERS} of them"
)
VERSION_NOT_SUPPORTED = ServiceError(505, "only HTTP/1.0 and HTTP/1.1 are served")
NO_TRANSFER_ENCODING = ServiceError(411, "send a Content-Length; Transfer-Encoding (chunked bodies) is not supported")
NEEDS_LENGTH = ServiceError(411, "a POST needs a Content-Length")
SHORT_BODY = ServiceError(400, "body shorter than its Content-Length")

_TOKEN = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_DIGITS = re.compile(r"[0-9]{1,20}")


def too_large(max_bytes: int = MAX_BODY_BYTES) -> ServiceError:
    return ServiceError(413, f"the request body is larger than {max_bytes} bytes")


@dataclass
class Head:
    """What the request line and headers decided: an ``error`` to answer (with ``headers``; ``close``: the
    connection must not carry another request), or the route ``kind`` to serve and, for a POST, the body's
    ``length`` to read."""

    error: ServiceError | None = None
    headers: dict[str, str] = field(default_factory=dict)
    close: bool = False
    kind: str | None = None
    length: int = 0


def declared_length(values: list[str], max_bytes: int = MAX_BODY_BYTES) -> int | ServiceError | None:
    """The body size that Content-Length header(s) declare: an int in [0, max_bytes], MALFORMED (not digits,
    or values that disagree; repeats of one value, also comma-separated, are one), 413 over ``max_bytes``,
    or None when there is none."""
    if not values:
        return None
    seen = {v.strip() for value in values for v in value.split(",")}
    if len(seen) != 1 or not _DIGITS.fullmatch(text := seen.pop()):
        return MALFORMED
    length = int(text)
    return too_large(max_bytes) if length > max_bytes else length


def _framing(method: str, target: str, version: str, headers: list[tuple[str, str]]) -> ServiceError | None:
    major, _, minor = version.partition(".")
    if major != "1" or not minor.isdigit():
        return VERSION_NOT_SUPPORTED
    if len(method) + len(target) + len(version) + 7 > MAX_REQUEST_LINE:  # "M T HTTP/1.1"
        return TARGET_TOO_LONG
    if len(headers) > MAX_HEADERS or sum(len(k) + len(v) + 4 for k, v in headers) > MAX_HEADER_BYTES:
        return HEADERS_TOO_LARGE
    if not _TOKEN.fullmatch(method) or any(not _TOKEN.fullmatch(k) or _BAD_VALUE.search(v) for k, v in headers):
        return MALFORMED
    hosts = sum(k.lower() == "host" for k, _ in headers)
    if hosts > 1 or (hosts == 0 and version != "1.0"):
        return MALFORMED
    if any(k.lower() == "transfer-encoding" for k, _ in headers):
        return NO_TRANSFER_ENCODING
    return None


def decide_head(
    method: str,
    target: str,
    version: str,
    headers: Iterable[tuple[str, str]],
    *,
    api_key: str | None,
    loading: bool,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> Head:
    """What to do with a request, from its request line (``target`` raw, with any query; ``version`` like
    "1.1") and its headers (names and values as sent, latin-1), before any of its body is read."""
    headers = list(headers)
    err = _framing(method, target, version, headers)
    if err is not None:
        return Head(err, close=True)
    path = target.split("?", 1)[0]
    kind = route(method, path)
    if kind == "health":
        return Head(kind="health")
    get = {k.lower(): v for k, v in headers}.get
    err = check_bearer(api_key, get("authorization"))
    if err is not None:
        return Head(err, dict(UNAUTHORIZED_HEADERS), close=True)
    if loading and kind is not None:
        return Head(LOADING, {"Retry-After": "5"}, close=method != "GET")
    if kind is None:
        err, allow = unrouted(method, path)
        return Head(err, allow, close=method != "GET")
    if kind == "models":
        return Head(kind="models")
    length = declared_length([v for k, v in headers if k.lower() == "content-length"], max_body_bytes)
    if length is None:
        return Head(NEEDS_LENGTH, close=True)
    if isinstance(length, ServiceError):
        return Head(length, close=True)
    return Head(kind=kind, length=length)


_PARSER_ERRORS = {400: MALFORMED, 414: TARGET_TOO_LONG, 431: HEADERS_TOO_LARGE, 505: VERSION_NOT_SUPPORTED}


def protocol_error(status: int) -> ServiceError:
    """The answer to a request ``http.server`` could not parse, by the status it chose."""
    return _PARSER_ERRORS.get(status, MALFORMED)


def h11_error(hint: int, buffered: bytes, short_body: bool) -> ServiceError:
    """The answer to a request h11 could not parse: ``hint`` is its error_status_hint, ``buffered`` what it
    held unparsed, ``short_body`` whether the client closed in the middle of a body."""
    if short_body:
        return SHORT_BODY
    if hint == 431:  # h11's head limit; a request line that long is 414 on the stdlib transport
        line_end = buffered.find(b"\r\n")
        return (
            TARGET_TOO_LONG
            if (line_end < 0 and len(buffered) > MAX_REQUEST_LINE) or line_end > MAX_REQUEST_LINE
            else HEADERS_TOO_LARGE
        )
    if hint == 501:  # h11 refuses Transfer-Encodings other than one "chunked"
        return NO_TRANSFER_ENCODING
    return MALFORMED


__all__ = [
    "without_query",
    "HEADERS_TOO_LARGE",
    "MALFORMED",
    "MAX_HEADERS",
    "MAX_REQUEST_LINE",
    "NEEDS_LENGTH",
    "NO_TRANSFER_ENCODING",
    "SHORT_BODY",
    "TARGET_TOO_LONG",
    "VERSION_NOT_SUPPORTED",
    "Head",
    "declared_length",
    "decide_head",
    "h11_error",
    "protocol_error",
    "too_large",
]


_QUERY = re.compile(r"(/[^\s?\"]*)\?[^\s\"]*")


def without_query(line: str) -> str:
    """A log line with every request target's query string cut (``?api_key=...``: a client may send its key or
    a prompt there); the path stays."""
    return _QUERY.sub(r"\1?...", line)
