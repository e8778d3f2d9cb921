"""--input-format / --output-format (issue 26): stdin, stdout, pipes and oddly named files in any format the
names detect (jsonl, jsonl.gz, jsonl.zst, csv, parquet), declared once in the CLI kit for every stream command;
a format that cannot be told, or is not what the name or the flag says, is an error naming it."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from ppt.io import ExitCode
from tests.helpers import PPT, ppt

ROWS = [{"id": i, "text": f"the river bank holds money {i}"} for i in range(5)]
JSONL = "".join(json.dumps(r) + "\n" for r in ROWS)
ARGS = ["sanitize", "-m", "custext+", "--space", "glove-6b-50d:2000", "--seed", "4", "-q", "--batch-size", "2"]


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """The real process, bytes in and out (stdin and stdout are pipes)."""
    return subprocess.run([*PPT, *args], input=stdin, capture_output=True, check=False, timeout=600)


@pytest.fixture(scope="module")
def want() -> str:
    r = ppt(*ARGS, stdin=JSONL)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _csv(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pacsv.write_csv(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def test_csv_from_stdin(want):
    r = ppt(*ARGS, "--input-format", "csv", stdin=_csv(ROWS).decode())
    assert r.returncode == 0, r.stderr
    assert r.stdout == want


def test_a_txt_file_read_as_jsonl_gz_by_the_flag_or_by_its_first_bytes(tmp_path, want):
    odd = tmp_path / "export.txt"
    odd.write_bytes(gzip.compress(JSONL.encode()))
    for flags in (["--input-format", "jsonl.gz"], []):  # a name that says nothing: its gzip signature
        r = ppt(*ARGS, "-i", str(odd), *flags)
        assert r.returncode == 0, r.stderr
        assert r.stdout == want


def test_a_name_or_flag_the_content_contradicts_is_exit_66_naming_both(tmp_path):
    gz = tmp_path / "data.jsonl"  # says JSONL, holds gzip
    gz.write_bytes(gzip.compress(JSONL.encode()))
    r = ppt(*ARGS, "-i", str(gz))
    assert r.returncode == ExitCode.NOINPUT
    assert "as jsonl" in r.stderr and "gzip" in r.stderr and "--input-format" in r.stderr
    plain = tmp_path / "data.bin"
    plain.write_text(JSONL)
    r = ppt(*ARGS, "-i", str(plain), "--input-format", "parquet")
    assert r.returncode == ExitCode.NOINPUT and "as parquet" in r.stderr and "river" not in r.stderr


@pytest.mark.slow(reason="real ppt processes through compressed pipes")
def test_gz_to_stdout_and_a_compressed_pipe_named_by_the_flag(want):
    r = run(*ARGS, "--output-format", "jsonl.gz", stdin=JSONL.encode())
    assert r.returncode == 0, r.stderr
    assert gzip.decompress(r.stdout).decode() == want
    back = run(*ARGS, "--input-format", "jsonl.gz", stdin=gzip.compress(JSONL.encode()))
    assert back.returncode == 0, back.stderr
    assert back.stdout.decode() == want
    # the same pipe without the flag: one clear error naming the format, not "invalid UTF-8" per line
    auto = run(*ARGS, "--on-error", "record", stdin=gzip.compress(JSONL.encode()))
    assert auto.returncode == ExitCode.NOINPUT and auto.stdout == b""
    assert b"gzip" in auto.stderr and b"--input-format jsonl.gz" in auto.stderr


@pytest.mark.slow(reason="real ppt processes piped into each other")
def test_parquet_through_pipes_both_ways(want):
    """Parquet's index is at its end: from a pipe it is copied to a temporary file first; to a pipe it is
    written in one pass."""
    r = run(*ARGS, "--output-format", "parquet", stdin=JSONL.encode())
    assert r.returncode == 0, r.stderr
    table = pq.read_table(io.BytesIO(r.stdout))
    assert table.column("id").to_pylist() == [row["id"] for row in ROWS]
    back = run(*ARGS, "--input-format", "parquet", stdin=pq_bytes(ROWS))
    assert back.returncode == 0, back.stderr
    assert back.stdout.decode() == want


def pq_bytes(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def test_stdin_redirected_from_a_file_is_recognised_by_its_first_bytes(tmp_path, want):
    f = tmp_path / "rows"  # no extension: `< rows` is a regular file, its signature read without consuming it
    f.write_bytes(pq_bytes(ROWS))
    with open(f, "rb") as stdin:
        r = subprocess.run([*PPT, *ARGS], stdin=stdin, capture_output=True, check=False, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == want


def test_odd_output_names_take_the_flag(tmp_path, want):
    out = tmp_path / "result.dat"
    r = ppt(*ARGS, "-o", str(out), "--output-format", "csv", stdin=JSONL)
    assert r.returncode == 0, r.stderr
    rows = pacsv.read_csv(out).to_pylist()
    assert [row["id"] for row in rows] == [r["id"] for r in ROWS]
    assert [row["text"] for row in rows] == [json.loads(x)["text"] for x in want.splitlines()]


def test_compressed_output_is_not_written_to_a_terminal():
    from ppt.io import PptError
    from ppt.io.output_formats import formatted
    from ppt.io.sinks import _FdSink

    leader, follower = os.openpty()
    try:
        with pytest.raises(PptError) as err:
            formatted(_FdSink(os.dup(follower)), "jsonl.gz", "stdout")
        assert err.value.exit_code == ExitCode.USAGE and "terminal" in err.value.message
    finally:
        os.close(leader)
        os.close(follower)


def test_every_stream_command_has_the_flags_and_ray_refuses_them(tmp_path):
    import typer

    from ppt.cli.common import Format
    from ppt.cli.main import app
    from ppt.io.formats import NAMES

    assert list(Format.__args__) == ["auto", *NAMES]
    root = typer.main.get_command(app)
    for path in (("sanitize",), ("query",), ("extract",), ("attack", "knn"), ("dp-opt", "apply"), ("eval", "phr")):
        cmd = root
        for name in path:
            cmd = cmd.commands[name]
        names = {p.name for p in cmd.params}
        assert "input_format" in names, path
        assert ("output_format" in names) == ("output" in names), path
    r = ppt("sanitize", "--engine", "ray", "-i", str(tmp_path / "x"), "--input-format", "csv")
    assert r.returncode == ExitCode.USAGE and "--input-format" in r.stderr and "--engine local" in r.stderr


def test_an_unknown_format_is_refused_by_the_cli():
    r = ppt(*ARGS, "--input-format", "xml", stdin=JSONL)
    assert r.returncode == 2


def test_zstd_both_ways_where_a_zstd_module_is_installed(tmp_path, want):
    from tests.io.test_output_formats import zstd_writer

    zstd = zstd_writer()
    if zstd is None:
        pytest.skip("neither compression.zstd (Python 3.14+) nor zstandard")
    pack = zstd.compress
    if zstd.__name__ == "compression.zstd":  # the standard library's
        unpack = zstd.decompress
    else:  # zstandard: a streamed frame does not say its size, so decompress it as a stream
        unpack = lambda data: zstd.ZstdDecompressor().decompressobj().decompress(data)  # noqa: E731
    src = tmp_path / "in.jsonl.zst"
    src.write_bytes(pack(JSONL.encode()))
    out = tmp_path / "out.jsonl.zst"
    r = ppt(*ARGS, "-i", str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert unpack(out.read_bytes()).decode() == want
    piped = run(*ARGS, "--input-format", "jsonl.zst", "--output-format", "jsonl.zst", stdin=src.read_bytes())
    assert piped.returncode == 0, piped.stderr
    assert unpack(piped.stdout).decode() == want


def test_a_fifo_is_read_as_a_pipe_by_its_name_or_the_flag(tmp_path, want):
    """`-i <(zcat x.gz)` and named FIFOs: never read ahead to guess (that would consume the data), so the name
    or the flag says the format."""
    import threading

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    for name, data, flags in (
        ("rows.csv", _csv(ROWS), []),
        ("rows", gzip.compress(JSONL.encode()), ["--input-format", "jsonl.gz"]),
        ("plain", JSONL.encode(), []),
    ):
        fifo = tmp_path / name
        os.mkfifo(fifo)

        def feed(path=fifo, payload=data):
            with open(path, "wb") as w:
                w.write(payload)

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        r = ppt(*ARGS, "-i", str(fifo), *flags)
        writer.join(10)
        assert r.returncode == 0, (name, r.stderr)
        assert r.stdout == want, name
