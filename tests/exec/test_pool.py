"""--workers N (ppt.exec.pool): worker processes change nothing but speed. Seeded output byte-identical to
the single-process run for any N and batch size, input order kept, --on-error counts, exit codes and
stderr identical, the capped empty-output warnings identical, a one-batch input starting no worker,
and a dead or failing worker failing the run closed (no -o file, no record text in the error)."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import signal

import pytest

from ppt.exec.pool import StagePool
from ppt.io import ExitCode, PptError, StreamArgs, run_stream
from tests.exec.pool_helpers import WORDS, TinyRecipe
from tests.helpers import untimed


@pytest.fixture
def recipe(tmp_path):
    return TinyRecipe(str(tmp_path / "cache"))


def make_input(n: int = 90, extra: dict[int, bytes] | None = None) -> bytes:
    """``n`` records of 3-12 words (every third without an id: its id is its line); ``extra`` puts raw
    lines before record i."""
    lines = []
    for i in range(n):
        if extra and i in extra:
            lines.append(extra[i])
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(3 + i % 10)]
        rec = {"text": " ".join(words) + f", {i}.", "n": i}
        if i % 3:
            rec = {"id": f"r{i}", **rec}
        lines.append(json.dumps(rec).encode())
    return b"\n".join(lines) + b"\n"


def run(
    recipe, data: bytes, workers: int, help_while_starting: bool = False, **opts
) -> tuple[int, bytes, str, StagePool | None]:
    """(exit code, stdout, stderr, the pool) of one run; workers=1: plain run_stream on the recipe's stage.
    Unless ``help_while_starting``, every batch runs in a worker once a second one is read (this process waits
    for the workers to start)."""
    args = StreamArgs(**opts)
    out, err = io.BytesIO(), io.StringIO()
    streams = {"_stdin": io.BytesIO(data), "_stdout": out, "_stderr": err}
    if workers == 1:
        return run_stream(args, recipe(), desc="sanitize", **streams), out.getvalue(), untimed(err.getvalue()), None
    with StagePool(recipe, workers, help_while_starting=help_while_starting) as pool:
        code = run_stream(args, pool, desc="sanitize", **streams)
    return code, out.getvalue(), untimed(err.getvalue()), pool


def test_seeded_output_is_byte_identical_for_any_workers_and_batch_size(recipe):
    recipe = dataclasses.replace(recipe, emit_alignment="al")  # the alignment output too
    data = make_input()
    code, expected, err, _ = run(recipe, data, 1, batch_size=64)
    assert code == 0 and expected.count(b"\n") == 90 and "90 ok" in err
    for workers in (1, 2, 3):
        for batch in (7, 32):
            got_code, got, got_err, pool = run(recipe, data, workers, batch_size=batch)
            assert (got_code, got_err) == (code, err), (workers, batch)
            assert got == expected, (workers, batch)
            if pool is not None:  # every batch ran in worker processes
                assert pool.batches_in_workers == -(-90 // batch)
    # as the CLI runs it: this process takes batches until a worker is ready, workers the rest
    assert run(recipe, data, 2, help_while_starting=True, batch_size=7)[:3] == (code, expected, err)
    assert all(json.loads(line)["al"] for line in expected.splitlines())
    ids = [json.loads(line).get("id") for line in expected.splitlines()]
    assert ids == [None if i % 3 == 0 else f"r{i}" for i in range(90)]  # input order kept


def test_unseeded_runs_still_draw_fresh_noise_in_workers(recipe):
    unseeded = dataclasses.replace(recipe, seed=None)
    data = make_input(40)
    _, a, _, _ = run(unseeded, data, 2, batch_size=5)
    _, b, _, _ = run(unseeded, data, 2, batch_size=5)
    assert a.count(b"\n") == b.count(b"\n") == 40 and a != b


BAD = {3: b"{not json", 10: b"[1, 2]", 20: b'{"id": "no-text"}', 33: b'{"id": "x", "text": "the", "ppt": 5}'}
MIN_KEPT = 8  # records 0, 1, 10, 11, 20, 21, ... of make_input keep fewer tokens: too_few_tokens


@pytest.mark.parametrize("on_error", ["fail", "skip", "record"])
def test_on_error_counts_exit_codes_and_stderr_match_the_single_process_run(recipe, on_error):
    if on_error == "fail":  # a bad line after a few batches are in flight: they are written, then it stops
        case, data = recipe, make_input(60, {30: b"{not json"})
    else:  # bad input lines and records failing in the stage (too_few_tokens)
        case, data = dataclasses.replace(recipe, min_kept=MIN_KEPT), make_input(60, BAD)
    expected = run(case, data, 1, batch_size=4, on_error=on_error)[:3]
    if on_error == "fail":
        assert expected[0] == ExitCode.DATAERR and "line 31" in expected[2] and expected[1].count(b"\n") == 30
    else:
        assert (
            expected[0] == ExitCode.SOME_FAILED
            and "too_few_tokens x12" in expected[2]
            and "not_an_object" in expected[2]
        )
    for workers, batch in ((2, 4), (3, 7)):
        assert run(case, data, workers, batch_size=batch, on_error=on_error)[:3] == expected, (workers, batch)


def test_a_stage_failure_under_fail_stops_at_the_same_record(recipe):
    strict = dataclasses.replace(recipe, min_kept=MIN_KEPT)
    data = b"\n".join(make_input(60).splitlines()[2:]) + b"\n"  # the first failure: record 10, in the 3rd batch
    expected = run(strict, data, 1, batch_size=4)[:3]
    assert expected[0] == ExitCode.SOME_FAILED and expected[1].count(b"\n") == 8 and "line 9" in expected[2]
    got_code, got, got_err, pool = run(strict, data, 2, batch_size=4)
    assert (got_code, got, got_err) == expected and pool.started


def test_empty_output_warnings_are_counted_once_over_the_run(recipe, caplog):
    # out-of-vocabulary words are dropped: each such record comes out empty and is warned about,
    # the first SanitizeStage.MAX_EMPTY_WARNINGS only, whichever worker ran it
    data = b"".join(
        json.dumps({"id": i, "text": "zzz qqq" if i % 2 else "apple pear"}).encode() + b"\n" for i in range(60)
    )

    def warnings_of(workers: int) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="ppt"):
            code, _, _, _ = run(recipe, data, workers, batch_size=4)
        assert code == 0
        return [r.getMessage() for r in caplog.records if "is empty" in r.getMessage()]

    expected = warnings_of(1)
    assert len(expected) == 20 and "further empty records are not listed" in expected[-1]
    assert warnings_of(3) == expected


def test_an_input_of_one_batch_starts_no_worker(recipe):
    data = make_input(16)
    code, out, _, pool = run(recipe, data, 2, batch_size=16)
    assert code == 0 and out.count(b"\n") == 16 and not pool.started
    code, out, _, pool = run(recipe, data, 2, batch_size=15)  # two batches: now the pool starts
    assert code == 0 and out.count(b"\n") == 16 and pool.started


def test_a_killed_worker_fails_the_run_closed(recipe, tmp_path):
    data = make_input(80)
    target = tmp_path / "out.jsonl"
    args = StreamArgs(batch_size=6, output=str(target))
    with (
        StagePool(dataclasses.replace(recipe, kill_on="r50"), 2, help_while_starting=False) as pool,
        pytest.raises(PptError) as exc,
    ):
        run_stream(args, pool, desc="sanitize", _stdin=io.BytesIO(data), _stderr=io.StringIO())
    assert exc.value.exit_code == ExitCode.TEMPFAIL and "worker process died" in exc.value.message
    assert not target.exists() and not list(tmp_path.glob(".out.jsonl*"))  # no partial file left behind


def test_a_failing_worker_fails_closed_without_quoting_records(recipe):
    data = make_input(40)
    args = StreamArgs(batch_size=5)
    with (
        StagePool(dataclasses.replace(recipe, fail_on="r20"), 2, help_while_starting=False) as pool,
        pytest.raises(PptError) as exc,
    ):
        run_stream(args, pool, _stdin=io.BytesIO(data), _stdout=io.BytesIO(), _stderr=io.StringIO())
    assert exc.value.exit_code == ExitCode.TEMPFAIL and "ValueError" in exc.value.message
    assert "boom" not in str(exc.value) + (exc.value.hint or "") and "apple" not in str(exc.value)


def test_workers_must_be_positive(recipe):
    with pytest.raises(PptError) as exc:
        StagePool(recipe, 0)
    assert exc.value.exit_code == ExitCode.USAGE


def test_cli_workers_match_one_process_on_the_default_space():
    from tests.helpers import ppt

    stdin = "".join(
        json.dumps({"id": i, "text": f"Alice met Bob in Paris on day {i} to talk about the weather."}) + "\n"
        for i in range(12)
    )
    one = ppt("sanitize", "--eps", "6", "--seed", "3", "--batch-size", "4", "--workers", "1", stdin=stdin)
    two = ppt("sanitize", "--eps", "6", "--seed", "3", "--batch-size", "4", "--workers", "2", stdin=stdin)
    assert one.returncode == two.returncode == 0, two.stderr
    assert one.stdout == two.stdout and one.stdout.count("\n") == 12
    assert untimed(one.stderr) == untimed(two.stderr)
    bad = ppt("sanitize", "--workers", "2", "--engine", "ray", "-i", "x", "-o", "y")
    assert bad.returncode == ExitCode.USAGE and "--workers" in bad.stderr


def test_importing_the_pool_imports_no_torch():
    import subprocess
    import sys

    code = "import sys, ppt.exec.pool; print('torch' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


@pytest.mark.slow(reason="Cape in worker processes against one process: real processes, the context model in each")
def test_cape_seeded_output_is_byte_identical_with_workers(tiny_lm, tmp_cache):
    """Cape (a context model; B calibrated in every worker) in workers on one thread each: the same
    bytes, signature (B) included, as one process on torch's threads."""
    import torch

    from ppt.exec.recipes import SanitizeRecipe

    recipe = SanitizeRecipe("cape", 3.0, model=str(tiny_lm), seed=1, device="cpu")
    data = make_input(24)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        code, expected, err, _ = run(recipe, data, 1, batch_size=8)
    finally:
        torch.set_num_threads(before)
    assert code == 0 and expected.count(b"\n") == 24
    got_code, got, _, pool = run(recipe, data, 2, batch_size=8)
    assert (got_code, got) == (code, expected) and pool.batches_in_workers == 3


def test_terminate_uses_the_public_call_where_python_has_it():
    from types import SimpleNamespace

    from ppt.exec.pool import _terminate

    calls = []
    _terminate(
        SimpleNamespace(
            terminate_workers=lambda: calls.append("public"),
            _processes={1: SimpleNamespace(terminate=lambda: calls.append("private"))},
        )
    )
    procs = {i: SimpleNamespace(terminate=lambda i=i: calls.append(i)) for i in range(2)}
    _terminate(SimpleNamespace(_processes=procs))  # before Python 3.14: the process table
    assert calls == ["public", 0, 1]


TORN_RUN = """
import sys
import typer
from ppt.cli.common import handle_errors
from ppt.exec.pool import StagePool
from ppt.io import StreamArgs, run_stream
from tests.exec.pool_helpers import TinyRecipe

cache, marker, data, target = sys.argv[1:]
recipe = TinyRecipe(cache, tear_on="r31", torn_marker=marker)
try:
    with handle_errors(), StagePool(recipe, 2, help_while_starting=False) as pool:
        run_stream(StreamArgs(batch_size=3, input=data, output=target), pool, desc="sanitize")
except typer.Exit as e:
    sys.exit(e.exit_code)
"""


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
@pytest.mark.slow(reason="real worker processes and real signals, twice")
def test_a_signal_while_a_worker_result_is_half_sent_still_ends_the_run(recipe, tmp_path, sig):
    """Reliability probe P-D7: a worker killed while sending its result left the executor's thread waiting
    for the rest of the message, and the pool's shutdown waited on that thread forever. The worker here
    stops half-way through a result on purpose; the signal must still end the run, with 128 + signal, no
    output file and no temp file, within a bound."""
    import os
    import subprocess
    import sys
    import time

    data, target, marker = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "torn"
    data.write_bytes(make_input(90))
    p = subprocess.Popen(
        [sys.executable, "-c", TORN_RUN, recipe.cache_dir, str(marker), str(data), str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the fork server and workers go with it on a hang
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    try:
        deadline = time.monotonic() + 240
        while not marker.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), p.stderr.read() if p.poll() is not None else "the worker never tore a result"
        time.sleep(0.5)  # the driving process is now waiting for that batch, its executor thread in recv()
        p.send_signal(sig)
        start = time.monotonic()
        try:
            code = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the run did not end within 60 s of the signal (hung in the pool's shutdown)")
        took = time.monotonic() - start
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    err = p.stderr.read().decode()
    assert code == 128 + sig, err
    assert took < 30 and "Traceback" not in err  # ~1.5 s; each bounded step of the stop waits at most 5 s
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(["in.jsonl", "torn", "cache"])
