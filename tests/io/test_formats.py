"""Local input as it comes (issue 26): -i data.jsonl.gz / .csv / .parquet read as the same records as JSONL."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ppt.io import ExitCode
from ppt.io.formats import format_of
from tests.helpers import ppt

ROWS = [{"id": i, "text": f"the river bank holds money {i}", "n": i * 1.5} for i in range(7)]
ARGS = ["sanitize", "-m", "custext+", "--space", "glove-6b-50d:2000", "--seed", "4", "-q", "--batch-size", "3"]


def test_every_format_gives_the_jsonl_records(tmp_path):
    plain = tmp_path / "in.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    with gzip.open(tmp_path / "in.jsonl.gz", "wb") as f:
        f.write(plain.read_bytes())
    table = pa.Table.from_pylist(ROWS)
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=2)  # several row groups: streamed
    pacsv.write_csv(table, tmp_path / "in.csv")
    want = ppt(*ARGS, "-i", str(plain))
    assert want.returncode == 0, want.stderr
    for name in ("in.jsonl.gz", "in.parquet", "in.csv"):
        got = ppt(*ARGS, "-i", str(tmp_path / name))
        assert got.returncode == 0, (name, got.stderr)
        assert got.stdout == want.stdout, name


def test_a_file_that_is_not_its_named_format_is_exit_66_naming_the_format(tmp_path):
    bad = tmp_path / "data.parquet"
    bad.write_bytes(b"this is not parquet\n")
    r = ppt(*ARGS, "-i", str(bad))
    assert r.returncode == ExitCode.NOINPUT and "as parquet" in r.stderr and "not parquet" not in r.stderr
    assert [format_of(p) for p in ("a.JSONL", "a.jsonl.gz", "x.csv", "x.pq", "x.txt")] == [
        "jsonl",
        "jsonl.gz",
        "csv",
        "parquet",
        "jsonl",
    ]
