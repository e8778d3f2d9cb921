"""Fuzzed JSONL for every kind of stream command (issue 29): lone surrogates, big integers, NULs, deep nesting,
huge lines, invalid UTF-8, non-objects, malformed JSON, missing and mistyped fields, mixed among good records
by a seeded generator. Each bad line fails alone naming its line, no raw text is echoed, every good line comes
out, and the exit code is the documented one (1: some records failed, --on-error record)."""

from __future__ import annotations

import json
import random

import pytest

from tests.helpers import ppt

SECRET = "Qwertzuiop-Secretname"


def good(i: int) -> bytes:
    text = f"the river {i} is wide"
    return json.dumps({"id": f"g{i}", "text": text, "raw": text, "generation": text, "map": []}).encode()


BAD: list[bytes] = [
    b'{"id": 1, "text": "\xff\xfe ' + SECRET.encode() + b'"}',  # invalid UTF-8
    b'{"id": 2, "text": "\\ud800 ' + SECRET.encode() + b'", "n": 12345678901234567890123}',  # lone surrogate + big int
    b'{"id": 3, "text": "\\udc00' + SECRET.encode() + b'"}',  # a low surrogate alone
    b"[" * 50_000 + b"]" * 50_000,  # deep nesting
    b'{"a": ' * 3000 + b"1" + b"}" * 3000,  # deep objects
    b"[1, 2]",
    b"42",
    b'"' + SECRET.encode() + b'"',
    b"null",
    b'{"id": 5, "text": ' + SECRET.encode() + b"}",  # malformed
    b'{"id": 6, "text": "' + SECRET.encode() + b'"',  # truncated
    b'{"id": 7}',  # no text field
    b'{"id": 8, "text": ["' + SECRET.encode() + b'"]}',  # text not a string
    b'{"id": 9, "text": "x", "ppt": "' + SECRET.encode() + b'"}',  # a ppt field that is not an object
    b"{" + b" " * 300_000 + b"}",  # a huge line that is an object without text
    b"\x00\x00" + SECRET.encode(),  # binary
]

COMMANDS = {
    "sanitize": ["sanitize", "-m", "custext+", "-e", "6", "--seed", "1"],
    "restore": ["restore", "--mapping-field", "map"],
    "attack-ngram": ["attack", "ngram", "--original-field", "raw", "--summary", "none"],
    "query-dry-run": [
        "query",
        "--dry-run",
        "--allow-raw",
        "--model",
        "m",
        "--output-field",
        "answer",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ],
}


def fuzzed(seed: int, n_good: int = 12) -> tuple[bytes, set[int], int]:
    """The input, the 1-based line numbers of the bad lines, and the number of lines."""
    rng = random.Random(seed)
    lines = [good(i) for i in range(n_good)] + rng.sample(BAD, k=len(BAD))
    rng.shuffle(lines)
    bad = {i + 1 for i, line in enumerate(lines) if not line.startswith(b'{"id": "g')}
    return b"\n".join(lines) + b"\n", bad, len(lines)


@pytest.mark.parametrize("name", list(COMMANDS))
@pytest.mark.parametrize("seed", [0, 1])
def test_every_bad_line_fails_alone(name, seed):
    stdin, bad, n = fuzzed(seed)
    r = ppt(*COMMANDS[name], "--on-error", "record", "-q", stdin=stdin)
    assert r.returncode == 1, r.stderr
    assert SECRET not in r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(out) == n  # one line out per line in: every good record, one error record per bad line
    errors = [o for o in out if "error" in o]
    assert {e["error"]["line"] for e in errors} == bad
    assert all(SECRET not in json.dumps(e["error"]) for e in errors)
    assert sorted(o["id"] for o in out if "error" not in o) == sorted(f"g{i}" for i in range(12))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_fail_mode_stops_at_the_first_bad_line_with_65_or_1(name):
    stdin, bad, _ = fuzzed(2)
    r = ppt(*COMMANDS[name], stdin=stdin)
    assert r.returncode in (65, 1), r.stderr  # a malformed line: 65; a record the stage rejects: 1
    assert f"line {min(bad)}" in r.stderr and SECRET not in r.stderr
