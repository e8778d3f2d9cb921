"""Issue 15 as a user meets it: the real `ppt` executable with pipes, closed streams, signals and `-o`
targets that are not plain files. custext+ (the fastest mechanism to start) stands in for any stage."""

from __future__ import annotations

import gzip
import json
import os
import select
import signal
import stat
import subprocess
import time

import pytest

from tests.helpers import PPT

SECRET = "Zanzibar Quux-Secretname"
FAST = ["sanitize", "-m", "custext+", "-e", "6"]


def recs(n: int = 3, **extra) -> str:
    return "".join(
        json.dumps({"id": i, "text": f"my friend {SECRET} likes the river", **extra}) + "\n" for i in range(n)
    )


def sh(script: str, stdin: str = "", timeout: int = 300, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], input=stdin, capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.mark.slow(reason="a real shell pipeline around a ppt process")
def test_o_dev_fd_and_dev_stdout_write_to_the_pipe():
    # /dev/fd/1 first: code that renames over the path fails there harmlessly (it cannot create files
    # in /proc/self/fd); only then /dev/stdout, which such code would replace with a regular file
    r = sh(f"ppt {' '.join(FAST)} -q -o /dev/fd/1 | wc -l", stdin=recs(2))
    assert r.returncode == 0 and r.stdout.strip() == "2", r.stderr
    r = sh(f"ppt {' '.join(FAST)} -q -o /dev/stdout | wc -l", stdin=recs(2))
    assert r.returncode == 0 and r.stdout.strip() == "2", r.stderr
    assert os.path.islink("/dev/stdout")


def test_o_process_substitution_gzip(tmp_path):
    gz = tmp_path / "x.jsonl.gz"
    r = sh(f"ppt {' '.join(FAST)} -q -o >(gzip > {gz}); wait $!", stdin=recs(3))
    assert r.returncode == 0, r.stderr
    lines = gzip.decompress(gz.read_bytes()).decode().splitlines()
    assert [json.loads(x)["id"] for x in lines] == [0, 1, 2]


def test_o_keeps_mode_and_new_private_file_is_0600(tmp_path):
    existing = tmp_path / "existing.jsonl"
    existing.write_text("old\n")
    os.chmod(existing, 0o600)
    new = tmp_path / "new.jsonl"
    r = sh(
        f"umask 022; ppt {' '.join(FAST)} -q --keep-original raw -o {new} && "
        f"ppt {' '.join(FAST)} -q --keep-original raw2 -o {existing} < {new}",
        stdin=recs(1),
    )
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o600  # raw text: never world-readable
    assert stat.S_IMODE(os.stat(existing).st_mode) == 0o600
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_closed_stdin_is_exit_66_and_closed_stdout_exit_74():
    r = sh(f"ppt {' '.join(FAST)} <&-")
    assert r.returncode == 66 and "stdin is closed" in r.stderr and "Traceback" not in r.stderr
    r = sh(f'ppt {" ".join(FAST)} >&- ; echo "exit=$?" >&2', stdin=recs(1))
    assert "exit=74" in r.stderr and "stdout is closed" in r.stderr and "Traceback" not in r.stderr


def test_closed_stderr_still_runs_with_seed():
    r = sh(f'ppt {" ".join(FAST)} --seed 3 2>&-; echo "exit=$?"', stdin=recs(2))
    lines = r.stdout.splitlines()
    assert lines[-1] == "exit=0"
    assert [json.loads(x)["id"] for x in lines[:-1]] == [0, 1]


def _wait_for(pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_with_o_leaves_no_temp_file(tmp_path, sig):
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    p = subprocess.Popen(
        [*PPT, *FAST, "-q", "--keep-original", "raw", "-o", str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        p.stdin.write(recs(1).encode())
        p.stdin.flush()
        # the temp file exists and the first record has been written to it (the stalled pipe was processed)
        assert _wait_for(
            lambda: any(f.endswith(".tmp") and os.path.getsize(tmp_path / f) > 0 for f in os.listdir(tmp_path)), 240
        ), "no temp file written"
        p.send_signal(sig)
        code = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert code in (128 + sig, -sig)
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl"] and out.read_text() == "old\n"
    assert b"Traceback" not in p.stderr.read()


def test_interactive_pipe_gets_each_record_without_a_full_batch():
    p = subprocess.Popen([*PPT, *FAST, "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        p.stdin.write(recs(1).encode())
        p.stdin.flush()
        ready, _, _ = select.select([p.stdout], [], [], 240)
        line = p.stdout.readline() if ready else b""
    finally:
        p.stdin.close()
        p.wait(timeout=120)
    assert line and json.loads(line)["id"] == 0, "the record waited for 63 more"


def test_one_bad_ppt_field_fails_alone_with_its_line():
    lines = [json.dumps({"id": i, "text": f"word {i}"}) for i in range(100)]
    lines[50] = json.dumps({"id": 50, "text": "word", "ppt": "oops"})
    r = sh(f"ppt {' '.join(FAST)} --on-error record", stdin="\n".join(lines) + "\n")
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert r.returncode == 1 and len(out) == 100
    bad = [o for o in out if "error" in o]
    assert len(bad) == 1 and bad[0]["id"] == 50 and bad[0]["error"]["line"] == 51
    assert "1 failed" in r.stderr and "line 51" in r.stderr


def test_big_integer_ids_and_fields_stay_exact():
    line = '{"id": 18446744073709551617, "text": "hello river", "n": 123456789012345678901234567890}\n'
    r = sh(f"ppt {' '.join(FAST)} -q --seed 1", stdin=line)
    assert r.returncode == 0, r.stderr
    assert '"id":18446744073709551617' in r.stdout and '"n":123456789012345678901234567890' in r.stdout


def test_error_ids_do_not_collide_with_real_ids():
    r = sh(
        f'printf \'{{"id": 1, "text": "call me at noon"}}\\nnot json\\n\' | ppt {" ".join(FAST)} --on-error record -q'
    )
    a, b = (json.loads(x) for x in r.stdout.splitlines())
    assert a["id"] == 1 and b["id"] is None and b["error"]["line"] == 2


def test_emptied_record_warns_and_min_kept_makes_it_an_error():
    stdin = json.dumps({"id": "a", "text": "?! ... !!"}) + "\n" + json.dumps({"id": "b", "text": "the river"}) + "\n"
    r = sh(f"ppt {' '.join(FAST)} --punct drop --seed 1", stdin=stdin)
    assert r.returncode == 0, r.stderr
    a, b = (json.loads(x) for x in r.stdout.splitlines())
    assert a["text"] == "" and a["ppt"]["sanitize"]["empty_output"] is True
    assert "empty_output" not in b["ppt"]["sanitize"]
    assert "line 1" in r.stderr and "empty" in r.stderr and "?!" not in r.stderr
    r = sh(f"ppt {' '.join(FAST)} --punct drop --min-kept 1 --on-error record -q", stdin=stdin)
    a, b = (json.loads(x) for x in r.stdout.splitlines())
    assert r.returncode == 1
    assert a == {"id": "a", "error": {"type": "too_few_tokens", "message": a["error"]["message"], "line": 1}}
    assert b["text"] and "error" not in b


# ---- a stderr that fails on write ------------------------------------------------------------------
# Issue 15: `2>&-` gave exit 1 and, with --seed, no output at all (a wrapper script such as a pyenv shim
# leaves a read-only file on a closed fd 2, so the first warning failed with EBADF); `2>/dev/full` too.
# Every message writer (warnings, notes, the progress bar, the summary, click/rich usage errors) must
# tolerate it: stdout complete, exit code as with a working stderr.


def _stderr_kind(kind: str):
    """(stderr argument, preexec_fn) for subprocess: fd 2 closed, read-only, or /dev/full."""
    if kind == "closed":
        return None, lambda: os.close(2)
    if kind == "read-only":
        return None, lambda: os.dup2(os.open(os.devnull, os.O_RDONLY), 2)
    return open("/dev/full", "w"), None  # closed by the caller


def _run_bad_stderr(kind: str, args: list[str], stdin: str, **env) -> subprocess.CompletedProcess:
    import sys

    err, pre = _stderr_kind(kind)
    try:
        return subprocess.run(
            [sys.executable, "-m", "ppt.cli.main", *args],
            input=stdin,
            stdout=subprocess.PIPE,
            stderr=err,
            preexec_fn=pre,
            text=True,
            timeout=300,
            env={**os.environ, **env},
            check=False,
        )
    finally:
        if err is not None:
            err.close()


@pytest.mark.parametrize("kind", ["closed", "read-only", "/dev/full"])
@pytest.mark.slow(reason="real ppt processes with a broken stderr, three times")
def test_failing_stderr_keeps_output_and_exit_code(kind):
    # warnings (seeded run, kept stopwords), notes, a forced progress bar and the summary all write to stderr
    r = _run_bad_stderr(kind, [*FAST, "--seed", "1"], recs(3), PPT_PROGRESS="1")
    assert r.returncode == 0
    assert [json.loads(x)["id"] for x in r.stdout.splitlines()] == [0, 1, 2]
    # an input error: the same exit code (65) as with a working stderr, the good records still out
    bad = recs(1) + "not json\n"
    ok = subprocess.run(
        [*PPT, *FAST, "--seed", "1"], input=bad, capture_output=True, text=True, timeout=300, check=False
    )
    r = _run_bad_stderr(kind, [*FAST, "--seed", "1"], bad)
    assert r.returncode == ok.returncode == 65
    assert r.stdout == ok.stdout
    # a usage error (click/rich render it on stderr): exit 2
    r = _run_bad_stderr(kind, ["sanitize", "--no-such-option"], "")
    assert r.returncode == 2 and r.stdout == ""


def test_tolerant_stream_silences_after_the_first_failure(tmp_path):
    from ppt.io.stdout import TolerantStream

    class Failing:
        writes = 0

        def write(self, text):
            Failing.writes += 1
            raise OSError(28, "No space left on device")

        def flush(self):
            raise OSError(28, "No space left on device")

        def isatty(self):
            return True

    s = TolerantStream(Failing())
    assert s.write("ppt: warning: x\n") == len("ppt: warning: x\n") and s.broken
    s.write("more\n")
    s.flush()
    print("via print", file=s, flush=True)
    assert Failing.writes == 1 and not s.isatty()
