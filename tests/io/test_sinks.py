"""ppt.io.sinks: file input and atomic, in-place file output."""

from __future__ import annotations

import orjson
import pytest

from ppt.io import ExitCode, PptError, StreamArgs, run_stream
from tests.io.helpers import jl, upper


def test_file_input_and_atomic_output(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(jl({"text": "a"}, {"text": "b"}))
    dst = tmp_path / "out.jsonl"
    dst.write_text("old\n")
    code = run_stream(StreamArgs(input=str(src), output=str(dst), quiet=True), upper)
    assert code == 0
    assert [orjson.loads(x)["text"] for x in dst.read_bytes().splitlines()] == ["A", "B"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


def test_output_untouched_on_exception(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(jl({"text": "a"}))
    dst = tmp_path / "out.jsonl"
    dst.write_text("old\n")

    def boom(batch):
        raise PptError("model missing")

    with pytest.raises(PptError):
        run_stream(StreamArgs(input=str(src), output=str(dst), quiet=True), boom)
    assert dst.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


def test_in_place_rewrite(tmp_path):
    f = tmp_path / "data.jsonl"
    f.write_bytes(jl(*({"text": f"r{i}"} for i in range(200))))
    assert run_stream(StreamArgs(input=str(f), output=str(f), quiet=True, batch_size=7), upper) == 0
    assert len(f.read_bytes().splitlines()) == 200


def test_missing_input_file(tmp_path):
    called = []
    with pytest.raises(PptError) as ei:
        run_stream(StreamArgs(input=str(tmp_path / "nope.jsonl")), lambda b: called.append(1) or [])
    assert ei.value.exit_code == ExitCode.NOINPUT == 66
    assert ei.value.hint and not called


def test_missing_output_dir(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(jl({"text": "a"}))
    with pytest.raises(PptError) as ei:
        run_stream(StreamArgs(input=str(src), output=str(tmp_path / "no" / "o.jsonl")), upper)
    assert ei.value.exit_code == ExitCode.IOERR
