"""`ppt sanitize` as a user runs it: the real executable in a subprocess on the default space."""

import json
import subprocess

import pytest

from tests.helpers import PPT, ppt

SECRET = "Zanzibar Quux-Secretname 4417"


def records(n=5):
    return "".join(
        json.dumps(
            {"id": f"r{i}", "text": f"My friend {SECRET} lives near the river and works as a nurse.", "extra": i}
        )
        + "\n"
        for i in range(n)
    )


@pytest.mark.slow(reason="loads the real default space (cl100k-minilm)")
def test_stdout_is_jsonl_with_stamp_and_no_raw_text():
    r = ppt("sanitize", "--mech", "rantext", "--eps", "6", "--quiet", stdin=records())
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 5
    for i, line in enumerate(lines):
        rec = json.loads(line)
        assert rec["id"] == f"r{i}" and rec["extra"] == i
        assert "Quux" not in rec["text"] and "Zanzibar" not in rec["text"]
        st = rec["ppt"]["sanitize"]
        assert st["signature"].startswith("rantext|eps:6|") and st["seeded"] is False and "seed" not in st
        cond = st["privacy"]["conditional"][0]
        assert st["privacy"]["proven"]["eps"] is None  # RANTEXT proves nothing per token (issue 16)
        assert cond["eps_given"] == pytest.approx(cond["tokens"] * cond["eps_per_token_given"])
    assert SECRET not in r.stdout + r.stderr


def test_keep_original_is_explicit():
    r = ppt("sanitize", "--eps", "6", "--keep-original", "raw", "--quiet", stdin=records(1))
    rec = json.loads(r.stdout)
    assert SECRET in rec["raw"] and SECRET not in rec["text"]


@pytest.mark.slow(reason="loads the real default space (cl100k-minilm)")
def test_emit_alignment_pairs_every_perturbed_token():
    r = ppt(
        "sanitize",
        "--eps",
        "6",
        "--seed",
        "2",
        "--emit-alignment",
        "al",
        "--keep-original",
        "raw",
        "--quiet",
        stdin=records(3),
    )
    assert r.returncode == 0, r.stderr
    from ppt.spaces import load_space

    vocab = load_space("cl100k-minilm", quiet=True).vocab
    for line in r.stdout.splitlines():
        rec = json.loads(line)
        st = rec["ppt"]["sanitize"]
        assert st["alignment_field"] == "al" and len(rec["al"]) == st["privacy"]["conditional"][0]["tokens"] > 0
        spans = [e for e in rec["al"] if len(e) == 4]
        assert len(spans) >= len(rec["al"]) // 2
        for orig, new, start, end in spans:  # the span holds the replacement word (case policy aside)
            assert rec["text"][start:end].lower() == vocab[new].strip().lower()
    # the attack reads the field; it agrees with re-aligning the texts
    field = subprocess.run(
        [*PPT, "attack", "knn", "--original-field", "raw", "--alignment-field", "al", "--summary-only"],
        input=r.stdout,
        capture_output=True,
        text=True,
        timeout=600,
    )
    text = subprocess.run(
        [*PPT, "attack", "knn", "--original-field", "raw", "--alignment-field", "none", "--summary-only"],
        input=r.stdout,
        capture_output=True,
        text=True,
        timeout=600,
    )
    a, b = json.loads(field.stdout)["summary"], json.loads(text.stdout)["summary"]
    assert a["alignment"] == {"field": 3} and b["alignment"] == {"text": 3}
    assert a["top1"]["trials"] == b["top1"]["trials"]


@pytest.mark.parametrize(
    "args,code,needle",
    [
        (["--emit-alignment", "text"], 2, "--emit-alignment"),
        (["--emit-alignment", "raw", "--keep-original", "raw"], 2, "two different fields"),
    ],
)
@pytest.mark.slow(reason="loads the real default space (cl100k-minilm), once per case")
def test_emit_alignment_field_checks(args, code, needle):
    r = ppt("sanitize", *args, stdin=records(1))
    assert r.returncode == code and needle in r.stderr and r.stdout == ""
    clash = ppt("sanitize", "--emit-alignment", "extra", "--on-error", "record", "--quiet", stdin=records(1))
    assert "field_conflict" in clash.stdout and SECRET not in clash.stdout


def test_seed_reproduces_across_batch_sizes_and_warns():
    a = ppt("sanitize", "--eps", "3", "--seed", "11", "--batch-size", "1", stdin=records())
    b = ppt("sanitize", "--eps", "3", "--seed", "11", "--batch-size", "64", stdin=records())
    c = ppt("sanitize", "--eps", "3", "--quiet", stdin=records())
    assert a.stdout == b.stdout and a.stdout != c.stdout
    assert "not production" in a.stderr


@pytest.mark.parametrize(
    "args,code,needle",
    [
        (["--eps", "0"], 2, "eps"),
        (["--eps", "nan"], 2, "eps"),
        (["--eps", "-1"], 2, "eps"),
        (["--mech", "nope"], 2, "ppt mechs"),
        (["--space", "glove-6b-50d:x"], 78, "space"),
        (["--oov", "sometimes"], 2, "oov"),
        (["--input", "/nonexistent/file.jsonl"], 66, "nonexistent"),
    ],
)
def test_bad_options_fail_before_reading(args, code, needle):
    r = ppt("sanitize", *args, stdin=records(1))
    assert r.returncode == code, r.stderr
    assert r.stdout == "" and needle in r.stderr and "Traceback" not in r.stderr


def test_bad_lines_exit_codes_and_no_text_on_stderr():
    bad = records(1) + f'{{"id": 9, "text": "{SECRET}"\n' + "[1,2]\n" + records(1)
    r = ppt("sanitize", "--eps", "6", "--quiet", stdin=bad)
    assert r.returncode == 65 and "line 2" in r.stderr and SECRET not in r.stderr
    assert len(r.stdout.splitlines()) == 1  # what came before the bad line is kept
    r = ppt("sanitize", "--eps", "6", "--on-error", "record", stdin=bad)
    assert r.returncode == 1
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert [("error" in o) for o in out] == [False, True, True, False]
    assert SECRET not in r.stdout + r.stderr
    r = ppt("sanitize", "--eps", "6", "--on-error", "skip", stdin=bad)
    assert r.returncode == 1 and len(r.stdout.splitlines()) == 2


def test_head_closes_cleanly():
    r = subprocess.run(
        "ppt sanitize --eps 6 --quiet < /dev/stdin | head -1",
        shell=True,
        input=records(200),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 1
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr


def test_weak_eps_note():
    r = ppt("sanitize", "--eps", "20", "--quiet", stdin=records(1))
    assert r.returncode == 0 and "weak protection" in r.stderr


def test_a_nested_text_field_is_sanitized_in_place():
    rec = {"id": 1, "msg": {"body": "the river bank holds money", "to": "ops"}}
    r = ppt(
        "sanitize",
        "-m",
        "santext",
        "--space",
        "glove-6b-50d:2000",
        "-e",
        "0.5",
        "--text-field",
        "msg.body",
        "--keep-original",
        "raw",
        "-q",
        stdin=json.dumps(rec) + "\n",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["msg"]["to"] == "ops" and out["raw"] == rec["msg"]["body"] and out["msg"]["body"] != rec["msg"]["body"]
    assert "msg.body" not in out and out["ppt"]["sanitize"]["text_field"] == "msg.body"
