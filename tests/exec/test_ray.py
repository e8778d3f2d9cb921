"""`--engine ray` on a local Ray cluster (``ray.init(num_cpus=2)``): byte-identical to the local run for a
seeded job across actor counts and batch sizes, a killed actor's batches retried without duplicates or
losses, --on-error with the local run's counts and exit codes, and a missing table failing before the job.

Marked ``ray`` (deselected by default; run with ``-m ray``) and skipped when Ray is not installed."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from ppt.exec.ray import RayOptions, run_stage_on_ray
from ppt.exec.recipes import SanitizeRecipe
from ppt.exec.shards import SUMMARY_NAME
from ppt.io import ExitCode, PptError, StreamArgs, run_stream
from tests.exec.ray_helpers import KillOnceRecipe
from tests.helpers import ppt, untimed

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = [json.loads(line) for line in (ROOT / "examples" / "prompts.jsonl").read_text().splitlines() if line.strip()]
RECIPE = SanitizeRecipe("custext+", 3.0, seed=11)  # cheap, on the default space the cache already holds


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def write_shards(directory: Path, n: int = 1000, shards: int = 4, extra: dict[int, bytes] | None = None) -> bytes:
    """``n`` records over ``shards`` files (the last one without ids: their ids come from the line);
    ``extra`` inserts raw lines (bad records) before record i. Returns the concatenated input."""
    directory.mkdir(parents=True, exist_ok=True)
    per = -(-n // shards)
    lines: list[list[bytes]] = [[] for _ in range(shards)]
    for i in range(n):
        s = i // per
        if extra and i in extra:
            lines[s].append(extra[i])
        rec = {"text": f"{PROMPTS[i % len(PROMPTS)]['text']} Ticket {i}.", "n": i}
        if s < shards - 1:
            rec = {"id": f"r{i}", **rec}
        lines[s].append(json.dumps(rec).encode())
    for s in range(shards):
        (directory / f"shard-{s}.jsonl").write_bytes(b"\n".join(lines[s]) + b"\n")
    return b"".join((directory / f"shard-{s}.jsonl").read_bytes() for s in range(shards))


def local(recipe, args: StreamArgs, data: bytes) -> tuple[int, bytes, str]:
    out, err = io.BytesIO(), io.StringIO()
    code = run_stream(
        dataclasses.replace(args, input="-", output="-"),
        recipe(),
        desc="sanitize",
        _stdin=io.BytesIO(data),
        _stdout=out,
        _stderr=err,
    )
    return code, out.getvalue(), err.getvalue()


def on_ray(recipe, args: StreamArgs, src: Path, out: Path, actors: int) -> tuple[int, bytes, str, dict]:
    err = io.StringIO()
    code = run_stage_on_ray(
        dataclasses.replace(args, input=str(src / "*.jsonl"), output=str(out)),
        recipe,
        options=RayOptions(actors=actors),
        desc="sanitize",
        _stderr=err,
    )
    parts = sorted(out.glob("part-*.jsonl"))
    return code, b"".join(p.read_bytes() for p in parts), err.getvalue(), json.loads((out / SUMMARY_NAME).read_text())


def test_seeded_output_is_identical_to_local_across_actors(cluster, tmp_path):
    data = write_shards(tmp_path / "in")
    args = StreamArgs(batch_size=64)
    code, expected, _ = local(RECIPE, args, data)
    assert code == 0 and expected.count(b"\n") == 1000
    for actors, batch in ((1, 64), (2, 37)):
        got_code, got, _, summary = on_ray(
            RECIPE, dataclasses.replace(args, batch_size=batch), tmp_path / "in", tmp_path / f"out{actors}", actors
        )
        assert got_code == 0 and got == expected, actors
        assert summary["ok"] == 1000 and summary["actors"] == actors and summary["exit_code"] == 0
        assert [s["ok"] for s in summary["shards"]] == [250] * 4
    assert b'"id":"r0"' in expected and b'"text":"' in expected


def test_killed_actor_is_retried_without_duplicates_or_losses(cluster, tmp_path):
    data = write_shards(tmp_path / "in", n=400)
    args = StreamArgs(batch_size=25)
    _, expected, _ = local(RECIPE, args, data)
    flag = tmp_path / "killed"
    recipe = KillOnceRecipe(RECIPE, marker="r150", flag=str(flag))
    code, got, _, summary = on_ray(recipe, args, tmp_path / "in", tmp_path / "out", actors=2)
    assert flag.exists(), "no actor was killed: the test tested nothing"
    assert code == 0 and summary["ok"] == 400
    assert got == expected  # every record exactly once, in order, with the same noise


@pytest.mark.parametrize("on_error", ["skip", "record", "fail"])
def test_bad_records_follow_on_error_as_locally(cluster, tmp_path, on_error):
    extra = {30: b"{not json", 77: b'{"id": "x1", "body": "no text field"}', 160: b'{"id": "x2", "text": "   "}'}
    data = write_shards(tmp_path / "in", n=200, extra=extra)
    recipe = dataclasses.replace(RECIPE, min_kept=30)  # short prompts keep fewer tokens: stage errors too
    args = StreamArgs(batch_size=16, on_error=on_error)
    code, expected, err = local(recipe, args, data)
    got_code, got, got_err, summary = on_ray(recipe, args, tmp_path / "in", tmp_path / "out", actors=2)
    assert got_code == code and got == expected
    last = [untimed(e.strip().splitlines()[-1]) for e in (got_err, err)]
    assert last[0] == last[1]  # the same summary / stop line
    if on_error != "fail":
        assert code == ExitCode.SOME_FAILED and summary["exit_code"] == code
        assert sum(summary["failed"].values()) > 3 and {
            "malformed_json",
            "missing_text_field",
            "empty_text",
            "too_few_tokens",
        } <= set(summary["failed"])


def test_missing_table_fails_before_the_job(cluster, tmp_path, tmp_cache):
    write_shards(tmp_path / "in", n=10)
    with pytest.raises(PptError) as e:
        run_stage_on_ray(
            StreamArgs(input=str(tmp_path / "in"), output=str(tmp_path / "out")),
            RECIPE,
            options=RayOptions(actors=1),
            build_hint=RECIPE.build_hint(),
        )
    assert e.value.exit_code == ExitCode.CONFIG
    assert "ppt sanitize --mech custext+ --eps 3" in e.value.hint and "-i /dev/null" in e.value.hint
    assert not (tmp_path / "out").exists()
    assert not any(tmp_cache.rglob("MANIFEST.json"))  # nothing was built


def test_cli_engine_ray_on_the_bundled_prompts(tmp_path):
    """The README's example: the CLI starts its own local cluster and matches the local CLI run."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "prompts.jsonl").write_text((ROOT / "examples" / "prompts.jsonl").read_text())
    common = ["sanitize", "-m", "custext+", "-e", "3", "--seed", "5"]
    loc = ppt(*common, "-q", "-i", str(src / "prompts.jsonl"))
    r = ppt(
        *common, "--engine", "ray", "--actors", "2", "--input", str(src / "*.jsonl"), "--output", str(tmp_path / "out")
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "out" / "part-00000.jsonl").read_text() == loc.stdout
    assert "ppt: sanitize: 6 ok" in r.stderr


def test_parquet_shards_give_the_jsonl_output(cluster, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = [{"id": f"r{i}", "text": f"{PROMPTS[i % len(PROMPTS)]['text']} Ticket {i}.", "n": i} for i in range(120)]
    (tmp_path / "pq").mkdir()
    for s in range(3):
        pq.write_table(pa.Table.from_pylist(rows[s * 40 : (s + 1) * 40]), tmp_path / "pq" / f"part-{s}.parquet")
    data = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    args = StreamArgs(batch_size=16)
    _, expected, _ = local(RECIPE, args, data)
    code = run_stage_on_ray(
        dataclasses.replace(args, input=str(tmp_path / "pq"), output=str(tmp_path / "out")),
        RECIPE,
        options=RayOptions(actors=2),
        _stderr=io.StringIO(),
    )
    assert code == 0
    assert b"".join(p.read_bytes() for p in sorted((tmp_path / "out").glob("part-*.jsonl"))) == expected


def test_unseeded_runs_draw_fresh_noise(cluster, tmp_path):
    write_shards(tmp_path / "in", n=120, shards=2)
    recipe = dataclasses.replace(RECIPE, seed=None)
    outs = []
    for k in range(2):
        code, got, _, summary = on_ray(recipe, StreamArgs(batch_size=16), tmp_path / "in", tmp_path / f"out{k}", 2)
        assert code == 0 and summary["ok"] == 120
        recs = [json.loads(x) for x in got.splitlines()]
        assert [r["n"] for r in recs] == list(range(120))  # order kept, each record once
        assert all(r["ppt"]["sanitize"]["seeded"] is False for r in recs)
        outs.append([r["text"] for r in recs])
    assert sum(a != b for a, b in zip(*outs)) > 60  # not the same noise twice


SIGNALLED_RUN = """
import sys
import typer
from ppt.cli.common import handle_errors
from ppt.exec.ray import RayOptions, run_stage_on_ray
from ppt.exec.recipes import SanitizeRecipe
from ppt.io import StreamArgs
from tests.exec.ray_helpers import SlowRecipe

src, out = sys.argv[1:]
recipe = SlowRecipe(SanitizeRecipe("custext+", 3.0, seed=11), 0.25)
try:
    with handle_errors():
        run_stage_on_ray(StreamArgs(batch_size=8, input=src, output=out), recipe, options=RayOptions(actors=2))
except typer.Exit as e:
    sys.exit(e.exit_code)
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_signal_ends_the_driver_like_the_local_engine(tmp_path, sig):
    """Reliability probe P-m11: SIGTERM exited 15 (or aborted) with Ray's C++ stack dump on stderr, and
    SIGHUP killed the driver with its temp shards left behind. Now 128 + signal, ``ppt: terminated``, the
    output directory without any temp file, and Ray shut down."""
    import os
    import signal
    import subprocess
    import sys
    import time

    write_shards(tmp_path / "in", n=800, shards=8)  # a block per shard: results come a shard at a time
    out = tmp_path / "out"
    p = subprocess.Popen(
        [sys.executable, "-c", SIGNALLED_RUN, str(tmp_path / "in"), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,  # its own process group: killed whole if the test fails
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and p.poll() is None:
            if out.is_dir() and any(n.startswith(".part-") for n in os.listdir(out)):
                break  # results are being written
            time.sleep(0.1)
        assert p.poll() is None, p.stderr.read()[-2000:]
        p.send_signal(getattr(signal, sig))
        code = p.wait(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    err = p.stderr.read()
    assert code == 128 + getattr(signal, sig), err[-2000:]
    assert "ppt: terminated" in err and "SIGTERM received" not in err and "Traceback" not in err
    assert os.listdir(out) == []  # no temp shard, nothing committed
