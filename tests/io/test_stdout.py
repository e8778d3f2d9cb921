"""ppt.io.stdout: stdout hygiene (stray prints go to stderr), broken pipes, a real stdin/stdout process."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson

from ppt.io import StreamArgs, run_stream, stdout_guard
from tests.io.helpers import jl, upper

REPO = Path(__file__).resolve().parents[2]


def test_stdout_guard_keeps_jsonl_on_stdout(capsys):
    def chatty(batch):
        print("loading weights...")
        return [{"ok": True} for _ in batch]

    code = run_stream(StreamArgs(quiet=True), chatty, _stdin=io.BytesIO(jl({"text": "a"})))
    cap = capsys.readouterr()
    assert code == 0
    assert cap.out == '{"ok":true}\n'
    assert "loading weights" in cap.err

    with stdout_guard():
        print("to stderr")
    cap = capsys.readouterr()
    assert cap.out == "" and "to stderr" in cap.err


def test_run_stream_inside_guard_still_writes_stdout(capsys):
    with stdout_guard():
        run_stream(StreamArgs(quiet=True), upper, _stdin=io.BytesIO(jl({"text": "a"})))
    cap = capsys.readouterr()
    assert orjson.loads(cap.out) == {"text": "A", "rid": 0}


SCRIPT = textwrap.dedent(
    """
    import sys
    from ppt.io import StreamArgs, run_stream
    sys.exit(run_stream(StreamArgs(batch_size=2), lambda b: [dict(r.data) for r in b]))
    """
)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_broken_pipe_is_quiet(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(jl(*({"text": f"row {i} " + "x" * 200} for i in range(50000))))
    cmd = f"{shlex.quote(sys.executable)} -c {shlex.quote(SCRIPT)} < {shlex.quote(str(src))} | head -1"
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {cmd}"], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr
    assert orjson.loads(proc.stdout.splitlines()[0])["text"].startswith("row 0")


def test_stdin_stdout_subprocess():
    data = jl({"text": "a"}) + b"bad\n"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("batch_size=2", "on_error='record'")],
        input=data,
        capture_output=True,
        env=_env(),
        timeout=60,
    )
    assert proc.returncode == 1
    lines = [orjson.loads(x) for x in proc.stdout.splitlines()]
    assert lines[0] == {"text": "a"} and lines[1]["error"]["type"] == "malformed_json"
    assert b"1 ok, 1 failed" in proc.stderr
