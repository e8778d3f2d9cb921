"""Issue 15, stream core: the -o sink never destroys what it writes to, signals clean up, one bad record
fails alone, big integers stay exact, error ids cannot collide, a stalled pipe is flushed.

In-process through run_stream with a trivial stage (fast); FIFOs, devices and pipes live in tmp dirs.
"""

from __future__ import annotations

import io
import os
import select
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import orjson
import pytest

from ppt.io import ExitCode, PptError, Record, RecordError, StreamArgs, run_stream, stamp

REPO = Path(__file__).resolve().parents[2]


def upper(batch: list[Record]) -> list[dict]:
    return [{**r.data, "text": r.text.upper()} for r in batch]


def jl(*objs) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


def run_to(path, data: bytes, fn=upper, **kw) -> int:
    opts = StreamArgs(output=str(path), **kw)
    return run_stream(opts, fn, desc="test", _stdin=io.BytesIO(data), _stderr=io.StringIO())


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


@pytest.fixture
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


# ------------------------------------------------------------------------------ -o targets


def test_output_writes_through_a_character_device(tmp_path):
    dev = tmp_path / "null"
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private copy of /dev/null
    except PermissionError:
        dev.symlink_to("/dev/null")  # not root: a link to the real one, which is only written through
    assert run_to(dev, jl({"text": "hi"})) == ExitCode.OK
    assert stat.S_ISCHR(os.stat(dev).st_mode), "the device was replaced by a regular file"
    assert leftovers(tmp_path) == []


def test_output_writes_through_a_fifo(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)  # noqa: SIM115
    reader.start()
    time.sleep(0.2)
    try:
        code = run_to(fifo, jl({"text": "hi"}, {"text": "yo"}))
    finally:
        reader.join(timeout=10)
        if reader.is_alive():  # never reached: unblock the reader so the test ends
            with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
                pass
            reader.join(timeout=10)
    assert code == ExitCode.OK
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert [orjson.loads(x)["text"] for x in got[0].splitlines()] == ["HI", "YO"]


def test_output_writes_through_a_symlink(tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    os.chmod(real, 0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to("real.jsonl")
    assert run_to(link, jl({"text": "hi"})) == ExitCode.OK
    assert link.is_symlink() and os.readlink(link) == "real.jsonl"
    assert orjson.loads(real.read_bytes())["text"] == "HI"
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640
    # a dangling link: its target is created, the link kept
    (tmp_path / "sub").mkdir()
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to("sub/new.jsonl")
    assert run_to(dangling, jl({"text": "yo"})) == ExitCode.OK
    assert dangling.is_symlink() and orjson.loads((tmp_path / "sub" / "new.jsonl").read_bytes())["text"] == "YO"
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "sub") == []


def test_output_to_dev_fd_n_writes_the_inherited_descriptor(tmp_path):
    r, w = os.pipe()
    try:
        code = run_to(f"/dev/fd/{w}", jl({"text": "hi"}))
        os.close(w)
        w = -1
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    assert code == ExitCode.OK
    assert orjson.loads(data)["text"] == "HI"


def test_output_to_dev_fd_of_a_regular_file_keeps_its_offset(tmp_path):
    target = tmp_path / "out.jsonl"
    with open(target, "ab") as fh:  # like `>> out.jsonl`: what is there stays
        fh.write(b'{"text":"EARLIER"}\n')
        fh.flush()
        assert run_to(f"/dev/fd/{fh.fileno()}", jl({"text": "hi"})) == ExitCode.OK
    assert [orjson.loads(x)["text"] for x in target.read_bytes().splitlines()] == ["EARLIER", "HI"]


def test_output_to_a_closed_dev_fd_is_an_io_error(tmp_path):
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(PptError) as exc:
        run_to(f"/dev/fd/{w}", jl({"text": "hi"}))
    assert exc.value.exit_code == ExitCode.IOERR


# ------------------------------------------------------------------------------ file modes


def test_existing_file_keeps_its_mode(tmp_path, umask022):
    for mode in (0o600, 0o640, 0o604):
        target = tmp_path / f"out{mode:o}.jsonl"
        target.write_text("old\n")
        os.chmod(target, mode)
        assert run_to(target, jl({"text": "hi"})) == ExitCode.OK
        assert stat.S_IMODE(os.stat(target).st_mode) == mode
        assert orjson.loads(target.read_bytes())["text"] == "HI"


def test_new_file_is_0600_when_private_else_umask(tmp_path, umask022):
    assert run_to(tmp_path / "private.jsonl", jl({"text": "hi"}), private=True) == ExitCode.OK
    assert stat.S_IMODE(os.stat(tmp_path / "private.jsonl").st_mode) == 0o600
    assert run_to(tmp_path / "public.jsonl", jl({"text": "hi"})) == ExitCode.OK
    assert stat.S_IMODE(os.stat(tmp_path / "public.jsonl").st_mode) == 0o644


def test_a_stage_that_writes_private_fields_makes_a_private_file(tmp_path, umask022):
    class Keeps:
        private_output = True

        def __call__(self, batch):
            return [{**r.data, "raw": r.text} for r in batch]

    assert run_to(tmp_path / "out.jsonl", jl({"text": "hi"}), fn=Keeps()) == ExitCode.OK
    assert stat.S_IMODE(os.stat(tmp_path / "out.jsonl").st_mode) == 0o600


def test_temp_file_is_never_world_readable(tmp_path, umask022):
    seen: list[int] = []

    def look(batch):
        seen.extend(stat.S_IMODE(os.stat(tmp_path / n).st_mode) for n in leftovers(tmp_path))
        return upper(batch)

    assert run_to(tmp_path / "out.jsonl", jl({"text": "hi"}), fn=look) == ExitCode.OK
    assert seen == [0o600]


def test_regular_file_is_still_replaced_atomically(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    inode = os.stat(target).st_ino

    def boom(batch):
        raise PptError("boom", ExitCode.CONFIG)

    with pytest.raises(PptError):
        run_to(target, jl({"text": "hi"}), fn=boom)
    assert target.read_text() == "old\n" and leftovers(tmp_path) == []
    assert run_to(target, jl({"text": "hi"})) == ExitCode.OK
    assert os.stat(target).st_ino != inode  # a new file renamed into place, not rewritten in place


# ------------------------------------------------------------------------------ signals

_KILLER = textwrap.dedent(
    """
    import io, os, signal, sys
    from ppt.io import StreamArgs, run_stream

    def stage(batch):
        os.kill(os.getpid(), getattr(signal, sys.argv[2]))
        return [r.data for r in batch]

    data = b"".join(b'{"text": "secret %d"}\\n' % i for i in range(300))
    code = run_stream(StreamArgs(output=sys.argv[1], batch_size=10), stage, _stdin=io.BytesIO(data))
    print("returned", code)
    """
)


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_signals_remove_the_temp_file(tmp_path, sig):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run(
        [sys.executable, "-c", _KILLER, str(target), sig], capture_output=True, text=True, timeout=120, env=env
    )
    assert r.returncode != 0 and "returned" not in r.stdout
    assert leftovers(tmp_path) == [], f"{sig} left the temp file behind"
    assert target.read_text() == "old\n"


def test_ignored_hangup_stays_ignored(tmp_path):
    """Under nohup SIGHUP is ignored: run_stream must not start honouring it."""
    target = tmp_path / "out.jsonl"
    script = "import signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n" + _KILLER
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run(
        [sys.executable, "-c", script, str(target), "SIGHUP"], capture_output=True, text=True, timeout=120, env=env
    )
    assert r.returncode == 0 and "returned 0" in r.stdout, r.stderr
    assert len(target.read_text().splitlines()) == 300


# ------------------------------------------------------------------------------ closed std streams


def test_closed_stdin_is_noinput(monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    with pytest.raises(PptError) as exc:
        run_stream(StreamArgs(), upper, _stdout=io.BytesIO(), _stderr=io.StringIO())
    assert exc.value.exit_code == ExitCode.NOINPUT and "stdin" in exc.value.message


def test_closed_stdout_is_ioerr(monkeypatch):
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(PptError) as exc:
        run_stream(StreamArgs(), upper, _stdin=io.BytesIO(jl({"text": "hi"})), _stderr=io.StringIO())
    assert exc.value.exit_code == ExitCode.IOERR and "stdout" in exc.value.message


def test_closed_stderr_drops_messages(monkeypatch):
    monkeypatch.setattr(sys, "stderr", None)
    out = io.BytesIO()
    code = run_stream(
        StreamArgs(on_error="skip"), upper, _stdin=io.BytesIO(jl({"text": "hi"}, {"text": 3})), _stdout=out
    )
    assert code == ExitCode.SOME_FAILED and orjson.loads(out.getvalue())["text"] == "HI"


# ------------------------------------------------------------------------------ records


def stamping(batch):
    return [stamp({**r.data, "text": r.text.upper()}, "test", {"n": 1}) for r in batch]


def test_one_record_with_a_bad_ppt_field_fails_alone():
    recs = [{"id": i, "text": f"t{i}"} for i in range(100)]
    recs[50]["ppt"] = 5  # line 51
    out, err = io.BytesIO(), io.StringIO()
    code = run_stream(StreamArgs(on_error="record"), stamping, _stdin=io.BytesIO(jl(*recs)), _stdout=out, _stderr=err)
    lines = [orjson.loads(x) for x in out.getvalue().splitlines()]
    assert code == ExitCode.SOME_FAILED and len(lines) == 100
    bad = [x for x in lines if "error" in x]
    assert bad == [
        {"id": 50, "error": {"type": "ppt_field_conflict", "message": bad[0]["error"]["message"], "line": 51}}
    ]
    assert "1 failed" in err.getvalue() and "line 51" in err.getvalue()
    # fail mode: the 50 records before it come out, the error names line 51
    out, err = io.BytesIO(), io.StringIO()
    code = run_stream(StreamArgs(), stamping, _stdin=io.BytesIO(jl(*recs)), _stdout=out, _stderr=err)
    assert code == ExitCode.DATAERR and len(out.getvalue().splitlines()) == 50
    assert "line 51" in err.getvalue()


def test_a_null_ppt_field_is_still_fine():
    out = io.BytesIO()
    code = run_stream(
        StreamArgs(), stamping, _stdin=io.BytesIO(jl({"text": "a", "ppt": None})), _stdout=out, _stderr=io.StringIO()
    )
    assert code == ExitCode.OK and orjson.loads(out.getvalue())["ppt"]["test"]["n"] == 1


def test_big_integers_stay_exact():
    big = 2**64
    line = (
        b'{"id": 18446744073709551616, "text": "hi", "n": -1180591620717411303424, '
        b'"nested": {"x": [123456789012345678901234567890, 1.5, 7]}, "s": "12345678901234567890123"}\n'
    )
    out = io.BytesIO()
    ids: list = []

    def fn(batch):
        ids.extend(r.id for r in batch)
        return upper(batch)

    code = run_stream(StreamArgs(), fn, _stdin=io.BytesIO(line), _stdout=out, _stderr=io.StringIO())
    assert code == ExitCode.OK and ids == [big] and isinstance(ids[0], int)
    text = out.getvalue().decode()
    for digits in (
        "18446744073709551616",
        "-1180591620717411303424",
        "123456789012345678901234567890",
        '"12345678901234567890123"',
    ):
        assert digits in text
    assert "e+" not in text and "1.5" in text


def test_big_integer_line_keeps_json_strictness():
    for raw in (
        b'{"id": 18446744073709551616, "text": "a", "x": NaN}',
        b'{"id": 18446744073709551616, "x": 1e999}',
        b'{"id": 18446744073709551616, "text": "a",}',
    ):
        out = io.BytesIO()
        code = run_stream(
            StreamArgs(on_error="record"), upper, _stdin=io.BytesIO(raw + b"\n"), _stdout=out, _stderr=io.StringIO()
        )
        assert code == ExitCode.SOME_FAILED
        assert orjson.loads(out.getvalue())["error"]["type"] == "malformed_json"


def test_error_records_of_lines_without_id_get_null_id_and_line():
    data = jl({"id": 1, "text": "a"}) + b"not json\n" + jl({"text": ""}, {"text": "b"}, {"id": 0, "text": ""})

    def fail_b(batch):
        return [RecordError("nope", "no") if r.text == "b" else {**r.data} for r in batch]

    out = io.BytesIO()
    code = run_stream(
        StreamArgs(on_error="record"), fail_b, _stdin=io.BytesIO(data), _stdout=out, _stderr=io.StringIO()
    )
    lines = [orjson.loads(x) for x in out.getvalue().splitlines()]
    assert code == ExitCode.SOME_FAILED
    assert lines[0] == {"id": 1, "text": "a"}
    assert [(x["id"], x["error"]["line"]) for x in lines[1:]] == [(None, 2), (None, 3), (None, 4), (0, 5)]


# ------------------------------------------------------------------------------ interactive input


def test_a_stalled_pipe_is_flushed_without_waiting_for_a_full_batch():
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    result: list = []
    src, dst = os.fdopen(r_in, "rb"), os.fdopen(w_out, "wb")
    t = threading.Thread(
        target=lambda: result.append(run_stream(StreamArgs(), upper, _stdin=src, _stdout=dst, _stderr=io.StringIO())),
        daemon=True,
    )
    t.start()
    try:
        os.write(w_in, jl({"text": "hi"}))
        ready, _, _ = select.select([r_out], [], [], 15)
        got = os.read(r_out, 65536) if ready else b""
    finally:
        os.close(w_in)
        t.join(timeout=30)
        dst.close()
        src.close()
        os.close(r_out)
    assert got and orjson.loads(got)["text"] == "HI", "one line waited for a full batch"
    assert result == [ExitCode.OK]


def test_files_and_ready_pipes_keep_full_batches(tmp_path):
    data = jl(*({"text": f"t{i}"} for i in range(200)))
    sizes: list[int] = []

    def fn(batch):
        sizes.append(len(batch))
        return upper(batch)

    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    opts = StreamArgs(input=str(path), output=str(tmp_path / "out.jsonl"))
    assert run_stream(opts, fn, _stderr=io.StringIO()) == ExitCode.OK
    assert sizes == [64, 64, 64, 8]
    sizes.clear()
    r, w = os.pipe()
    os.write(w, data)  # all there before the run starts (fits a pipe buffer)
    os.close(w)
    with os.fdopen(r, "rb") as src:
        assert run_stream(StreamArgs(), fn, _stdin=src, _stdout=io.BytesIO(), _stderr=io.StringIO()) == ExitCode.OK
    assert sizes == [64, 64, 64, 8]


def test_records_that_carry_raw_text_downstream_make_a_private_file(tmp_path, umask022):
    """`ppt query -o` over records sanitized with --keep-original: the raw field passes through."""
    rec = {"text": "x", "raw": "secret", "ppt": {"sanitize": {"keep_original": "raw", "alignment_field": None}}}
    assert run_to(tmp_path / "out.jsonl", jl(rec), fn=lambda b: [r.data for r in b]) == ExitCode.OK
    assert stat.S_IMODE(os.stat(tmp_path / "out.jsonl").st_mode) == 0o600
    rec["ppt"]["sanitize"]["keep_original"] = None  # stamped, nothing raw: the umask decides
    assert run_to(tmp_path / "out2.jsonl", jl(rec), fn=lambda b: [r.data for r in b]) == ExitCode.OK
    assert stat.S_IMODE(os.stat(tmp_path / "out2.jsonl").st_mode) == 0o644


def test_writers_outside_the_stream_exit_74_on_a_full_device():
    """Reliability probe P-D6: dp-opt's result, a summary and make-pii turned write errors into tracebacks."""
    import pytest

    from ppt.io import ExitCode, PptError
    from ppt.io.sinks import write_lines

    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    with pytest.raises(PptError) as e:
        write_lines("/dev/full", [b"x" * 100000 + b"\n"])
    assert e.value.exit_code == ExitCode.IOERR and "/dev/full" in e.value.message
    from tests.helpers import ppt

    r = ppt("eval", "make-pii", "-n", "3", "-o", "/dev/full")
    assert r.returncode == ExitCode.IOERR and "Traceback" not in r.stderr
