"""ppt.remote.journal: the --resume journal drops a torn tail and ignores error records."""

from __future__ import annotations

import json

import pytest

from ppt.remote.journal import Journal


def test_journal_drops_a_torn_tail_and_ignores_errors(tmp_path):
    path = tmp_path / "j.jsonl"
    good = {"id": "a", "generation": "x"}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"id": "b", "error": {}}) + "\n" + '{"id": "c", "gen')
    j = Journal(str(path), "id", "generation")
    try:
        assert "a" in j and "b" not in j and "c" not in j and len(j) == 1
        assert j.get("a") == good
        j.append("c", {"id": "c", "generation": "y"})
        with pytest.raises(Exception, match="in use"):
            Journal(str(path), "id", "generation")
    finally:
        j.close()
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == ["a", "b", "c"]


def test_journal_keeps_big_integer_ids_and_fields_exact(tmp_path):
    """--resume replays journaled answers: an id or field beyond 64 bits must come back exact, not as a float."""
    big = 2**70 + 1
    path = tmp_path / "j.jsonl"
    j = Journal(str(path), "id", "generation")
    try:
        j.append(big, {"id": big, "generation": "x", "n": big})
    finally:
        j.close()
    j = Journal(str(path), "id", "generation")
    try:
        assert big in j and len(j) == 1
        rec = j.get(big)
        assert rec["id"] == big and rec["n"] == big and isinstance(rec["n"], int)
    finally:
        j.close()
