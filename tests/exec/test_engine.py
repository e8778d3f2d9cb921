"""`--engine` without a cluster: the exit-78 path when Ray is missing, argument checks, the read-only cache
guard, stage recipes, and the driver's --on-error bookkeeping (fed result rows directly, no Ray)."""

from __future__ import annotations

import io
import json
import os
import pickle

import numpy as np
import pytest

from ppt.exec.ray import (
    BAD_INPUT,
    FAILED,
    OK,
    RayOptions,
    StageActor,
    _drain,
    _Tally,
    check_options,
)
from ppt.exec.readonly import read_only_cache
from ppt.exec.recipes import SanitizeRecipe
from ppt.exec.shards import ShardWriter, output_name
from ppt.io import ExitCode, PptError, RecordError, StreamArgs, run_stream
from tests.helpers import ppt, ppt_process


@pytest.fixture
def no_ray(tmp_path):
    """An environment where `import ray` fails, whether or not Ray is installed here (for ``ppt_process``: a
    run in this process imports the Ray it finds)."""
    fake = tmp_path / "fake-site" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray (test)')\n")
    return {"PYTHONPATH": os.pathsep.join([str(fake.parent), os.environ.get("PYTHONPATH", "")])}


def test_engine_ray_without_ray_exits_78_with_the_install_command(tmp_path, no_ray):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 1, "text": "hello world"}\n')
    r = ppt_process("sanitize", "--engine", "ray", "-i", str(src), "-o", str(tmp_path / "out"), env=no_ray)
    assert r.returncode == 78, r.stderr
    from ppt.dist import pip_install

    assert pip_install("ray") in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow(reason="a real ppt process, torch and the default space loaded in it")
def test_engine_local_is_the_default_and_needs_no_ray(no_ray):
    r = ppt_process(
        "sanitize",
        "-m",
        "rantext",
        "-e",
        "6",
        "--quiet",
        stdin='{"id": 1, "text": "my friend lives here"}\n',
        env=no_ray,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ppt"]["sanitize"]["seeded"] is False


@pytest.mark.parametrize(
    "argv",
    [
        ["--ray-address", "127.0.0.1:6379"],
        ["--actors", "2"],
        ["--engine", "local", "--actors", "2"],
        ["--engine", "spark"],
        ["--engine", "ray", "--actors", "0"],
    ],
)
def test_engine_arguments_are_checked(argv):
    r = ppt("sanitize", *argv, "--quiet", stdin="")
    assert r.returncode == 2, (argv, r.stderr)


def test_check_options():
    check_options(StreamArgs(), RayOptions(actors=1))
    for args, opts in [
        (StreamArgs(on_error="ignore"), RayOptions()),
        (StreamArgs(batch_size=0), RayOptions()),
        (StreamArgs(), RayOptions(actors=0)),
        (StreamArgs(), RayOptions(num_gpus=-1)),
    ]:
        with pytest.raises(PptError) as e:
            check_options(args, opts)
        assert e.value.exit_code == ExitCode.USAGE


def test_read_only_cache_serves_hits_and_refuses_to_build(tmp_cache):
    from ppt.cache import Cache

    cache = Cache()
    built = []

    def build(tmp):
        built.append(tmp)
        (tmp / "x.bin").write_bytes(b"1")

    cache.get_or_build("demo", {"a": 1}, build)
    with read_only_cache(hint="run `ppt precompute demo`"):
        assert cache.get_or_build("demo", {"a": 1}, build).path.is_dir()  # a hit
        with pytest.raises(PptError) as e:
            cache.get_or_build("demo", {"a": 2}, build)
    assert e.value.exit_code == ExitCode.CONFIG and "demo" in e.value.message and "ppt precompute" in e.value.hint
    assert len(built) == 1 and not cache.path_for("demo", "x").exists()
    assert not any(p.name.startswith(".") for p in (tmp_cache / "demo").iterdir())  # no build dir left
    cache.get_or_build("demo", {"a": 2}, build)  # restored outside the guard
    assert len(built) == 2


def test_recipe_pickles_and_names_the_build_command():
    r = SanitizeRecipe("custext+", 1.0, params={"k": 20, "mode": "x"}, policy={"oov": "drop", "case": None}, seed=3)
    assert pickle.loads(pickle.dumps(r)) == r
    hint = r.build_hint()
    assert (
        "ppt sanitize --mech custext+ --eps 1 --param k=20 --param mode=x --oov drop -i /dev/null -o /dev/null" in hint
    )
    assert "--seed" not in hint


class _Batches:
    def __init__(self, batches):
        self.batches = batches

    def iter_batches(self, **_):
        yield from self.batches


def _rows(rows):
    cols = list(zip(*rows))
    return {
        "shard": np.array(cols[0]),
        "line_no": np.array(cols[1]),
        "status": np.array(cols[2], dtype=np.int8),
        "out": np.array(cols[3], dtype=object),
        "etype": np.array(cols[4], dtype=object),
        "emsg": np.array(cols[5], dtype=object),
    }


ROWS = [
    (0, 1, OK, b'{"a":1}\n', "", ""),
    (0, 2, FAILED, b'{"id":null,"error":{}}\n', "too_few_tokens", "keeps 0 token(s)"),
    (1, 3, OK, b'{"a":3}\n', "", ""),
    (1, 4, BAD_INPUT, b'{"id":null,"error":{"line":4}}\n', "malformed_json", "malformed JSON"),
    (1, 5, OK, b'{"a":5}\n', "", ""),
]


@pytest.mark.parametrize(
    "on_error, code, written",
    [
        ("skip", ExitCode.SOME_FAILED, [b'{"a":1}\n', b'{"a":3}\n{"a":5}\n']),
        (
            "record",
            ExitCode.SOME_FAILED,
            [b'{"a":1}\n{"id":null,"error":{}}\n', b'{"a":3}\n{"id":null,"error":{"line":4}}\n{"a":5}\n'],
        ),
        ("fail", ExitCode.SOME_FAILED, [b'{"a":1}\n', b""]),  # a stage error under fail: 1, output before it kept
    ],
)
def test_drain_follows_on_error(tmp_path, on_error, code, written):
    args = StreamArgs(on_error=on_error)
    err = io.StringIO()
    tally, writer = _Tally(args, "sanitize", 2, err), ShardWriter(tmp_path, 2)
    got = _drain(_Batches([_rows(ROWS[:2]), _rows(ROWS[2:])]), args, tally, writer)
    got = got if got is not None else (ExitCode.SOME_FAILED if tally.failed else ExitCode.OK)
    writer.commit()
    assert got == code
    assert [(tmp_path / output_name(i, 2)).read_bytes() for i in range(2)] == written
    if on_error == "fail":
        assert tally.ok == 1 and "stopped at line 2 (too_few_tokens) after 1 ok" in err.getvalue()
    else:
        tally.summary()
        assert tally.ok == 3 and "3 ok, 2 " in err.getvalue() and "(lines 2, 4)" in err.getvalue()


def test_drain_bad_input_under_fail_is_65(tmp_path):
    args = StreamArgs(on_error="fail")
    tally, writer = _Tally(args, "sanitize", 2, io.StringIO()), ShardWriter(tmp_path, 2)
    assert _drain(_Batches([_rows([ROWS[0], ROWS[2], ROWS[3], ROWS[4]])]), args, tally, writer) == ExitCode.DATAERR
    assert tally.ok == 2


class _Upper:
    """A tiny per-record stage: upper-cases the text; a record with "bad" fails."""

    name = "upper"
    private_output = False

    def prepare(self):
        pass

    def __call__(self, records):
        return [
            RecordError("bad_word", "the record says bad") if "bad" in r.text else {**r.data, "text": r.text.upper()}
            for r in records
        ]


@pytest.mark.parametrize("on_error", ["skip", "record", "fail"])
def test_actor_rows_equal_run_stream_output(on_error):
    """The actor's rows, drained, are byte for byte what run_stream writes for the same lines."""
    lines = [b'{"id": "a", "text": "hello"}', b"not json", b'{"id": "b", "text": "a bad one"}', b'{"text": "no id"}']
    args = StreamArgs(on_error=on_error, quiet=True)
    out = io.BytesIO()
    local_code = run_stream(
        args, _Upper(), _stdin=io.BytesIO(b"\n".join(lines) + b"\n"), _stdout=out, _stderr=io.StringIO()
    )
    actor = StageActor(_Upper, args)
    rows = actor(
        {
            "raw": np.array(lines, dtype=object),
            "line_no": np.arange(1, 5),
            "shard": np.zeros(4, dtype=int),
            "bad": np.array([""] * 4, dtype=object),
        }
    )
    buf = io.BytesIO()

    class W:  # the ShardWriter interface _drain uses
        private = False

        def write(self, shard, data):
            buf.write(data)

        def mark_private(self):
            self.private = True

    code = _drain(_Batches([rows]), args, _Tally(args, "x", 1, io.StringIO()), W())
    tally_code = code if code is not None else ExitCode.SOME_FAILED
    assert buf.getvalue() == out.getvalue() and tally_code == local_code
