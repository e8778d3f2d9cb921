"""`ppt query`: --resume with repeated ids, and one bad record failing alone (issue 15).

Real `ppt query` processes against the loopback EchoService (127.0.0.1, ephemeral ports)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

pytest.importorskip("httpx")

from ppt.testing import EchoService, loopback  # noqa: E402
from tests.helpers import PPT  # noqa: E402


def run(url: str, args: list[str], recs: list[dict]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*PPT, "query", "--model", "m", "--base-url", url, "--allow-raw", *args],
        input="".join(json.dumps(r) + "\n" for r in recs),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PPT_QUIET": ""},
    )


def journal_ids(path) -> list:
    return [json.loads(x).get("id") for x in path.read_text().splitlines()]


def test_resume_refuses_a_repeated_id_instead_of_copying_the_earlier_answer(tmp_path):
    journal = tmp_path / "j.jsonl"
    svc = EchoService()
    with loopback(svc) as (_, url):
        first = run(url, ["--resume", str(journal)], [{"id": "a", "text": "first record", "raw": "SECRET-A"}])
        assert first.returncode == 0, first.stderr
        sent = len(svc.bodies)
        # the later "a" is another record: it must never receive the first one's saved output
        r = run(
            url,
            ["--resume", str(journal)],
            [
                {"id": "a", "text": "first record", "raw": "SECRET-A"},
                {"id": "b", "text": "second record"},
                {"id": "a", "text": "third record"},
            ],
        )
    assert r.returncode == 65, r.stderr
    assert "duplicate id" in r.stderr and "line 3" in r.stderr and "line 1" in r.stderr
    assert "SECRET-A" not in r.stdout + r.stderr and "third record" not in r.stdout + r.stderr
    assert len(svc.bodies) == sent  # the batch holding the repeat sent nothing
    assert journal_ids(journal) == ["a"]


def test_resume_repeated_id_within_one_batch_is_refused_before_sending(tmp_path):
    journal = tmp_path / "j.jsonl"
    svc = EchoService()
    with loopback(svc) as (_, url):
        r = run(
            url,
            ["--resume", str(journal)],
            [{"id": 7, "text": "x one"}, {"id": 8, "text": "x two"}, {"id": 7, "text": "x three"}],
        )
    assert r.returncode == 65 and "duplicate id" in r.stderr
    assert svc.bodies == [] and r.stdout == ""
    ids = journal_ids(journal) if journal.exists() else []
    assert len(ids) == len(set(map(json.dumps, ids)))  # each id at most once in the journal


def test_resume_without_ids_keys_by_line_and_never_collides_with_real_ids(tmp_path):
    journal = tmp_path / "j.jsonl"
    recs = [{"id": 1, "text": "has id one"}, {"text": "no id, line two"}, {"text": "no id, line three"}]
    svc = EchoService()
    with loopback(svc) as (_, url):
        r1 = run(url, ["--resume", str(journal)], recs)
        r2 = run(url, ["--resume", str(journal)], recs)
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    assert len(svc.bodies) == 3  # the second run resumed all three
    assert r1.stdout == r2.stdout
    from ppt.remote.journal import Journal, line_key, record_key

    j = Journal(str(journal), "id", "generation")
    try:
        assert len(j) == 3 and line_key(2) in j and line_key(3) in j and 1 in j
        assert record_key({"text": "t"}, "id", 2) == line_key(2) != record_key({"id": 1}, "id", 1)
    finally:
        j.close()


def test_allow_raw_one_bad_record_fails_alone_and_paid_answers_are_kept(tmp_path):
    recs = [{"id": i, "text": f"hello number {i}"} for i in range(6)]
    recs[2]["ppt"] = 5  # not an object: this record cannot be stamped
    svc = EchoService()
    with loopback(svc) as (_, url):
        r = run(url, ["--on-error", "record"], recs)
    assert r.returncode == 1, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert [o["id"] for o in out] == list(range(6))
    assert out[2]["error"]["type"] == "ppt_field_conflict" and out[2]["error"]["line"] == 3
    assert all(o["generation"].startswith("echo ") for k, o in enumerate(out) if k != 2)
    assert len(svc.bodies) == 5  # the bad record is refused before it is sent (nothing paid for it)


def test_resume_emits_a_journaled_answer_only_for_the_same_request(tmp_path):
    """Reliability probe P-S2: id-less records keyed by line got another record's saved raw field and answer after
    the input changed (the current record was never sent, exit 0); with ids, a changed model or text resumed the
    old answers. A journaled answer is now emitted only when its request digest matches this run's request."""
    journal = tmp_path / "j.jsonl"
    v1 = [
        {"text": "alpha patient", "raw": "Ann"},
        {"text": "bravo patient", "raw": "Bob"},
        {"text": "charlie patient", "raw": "Cid"},
    ]
    svc = EchoService()
    with loopback(svc) as (_, url):
        first = run(url, ["--resume", str(journal)], v1[:2])  # a run that stopped after two records
        assert first.returncode == 0, first.stderr
        again = run(url, ["--resume", str(journal)], v1[1:])  # the first record removed: the lines moved
        same = run(url, ["--resume", str(journal)], v1[1:])  # nothing changed since: all resumed
        fresh = run(url, [], v1[1:])  # each record's own answer (the echo service answers per prompt)
        other_model = subprocess.run(
            [*PPT, "query", "--model", "m2", "--base-url", url, "--allow-raw", "--resume", str(journal)],
            input="".join(json.dumps(r) + "\n" for r in v1[1:]),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert again.returncode == 0, again.stderr
    out = [json.loads(x) for x in again.stdout.splitlines()]
    assert [o["raw"] for o in out] == ["Bob", "Cid"]  # each record keeps its own fields
    assert [o["generation"] for o in out] == [json.loads(x)["generation"] for x in fresh.stdout.splitlines()]
    assert "2 sent again (changed since journaled)" in again.stderr
    assert "2 resumed from the journal" in same.stderr and "0 answered" in same.stderr
    assert "2 sent again" in other_model.stderr and all(
        json.loads(x)["ppt"]["query"]["model"] == "m2" for x in other_model.stdout.splitlines()
    )


def test_a_journal_that_cannot_be_written_stops_sending_and_keeps_the_answer_in_hand(tmp_path, monkeypatch):
    """P-D3: with the --resume journal on a full disk, the run went on sending and threw away 12 of 16 paid
    answers (exit 1). Now the first failed journal write stops sending; the answers received are written to the
    output and the run exits 74."""
    import errno

    from ppt.remote.journal import Journal
    from tests.helpers import ppt

    real, calls = Journal.append, []

    def full_after_two(self, *args, **kwargs):
        calls.append(1)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Journal, "append", full_after_two)
    journal = tmp_path / "j.jsonl"
    recs = [{"id": f"r{i}", "text": f"record {i}"} for i in range(16)]
    svc = EchoService()
    with loopback(svc) as (_, url):
        args = ["query", "--model", "m", "--base-url", url, "--allow-raw", "--concurrency", "1"]
        r = ppt(*args, "--resume", str(journal), stdin="".join(json.dumps(x) + "\n" for x in recs))
    assert r.returncode == 74, r.stderr
    assert "could not write the --resume journal" in r.stderr and "No space left" in r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(out) == 3 and all("error" not in o for o in out)  # two journaled + the one in hand
    assert len(svc.bodies) == 3  # nothing sent after the failure
    assert journal_ids(journal) == ["r0", "r1"]
