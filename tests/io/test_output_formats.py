"""`-o` in the format the name says (issue 26): .jsonl.gz, .csv and .parquet, the same records as JSONL, through
the same atomic file sink; what ppt writes it reads back with `-i`."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from tests.helpers import ppt

RECS = [
    {"id": 1, "text": "the river is wide", "generation": "ok", "map": [], "n": 3},
    {"id": 2, "text": "call me at noon", "generation": "ok", "map": [], "meta": {"a": [1, 2]}, "n": 2.5},
    {"id": 3, "text": ["not", "a", "string"]},  # fails alone: an error record has other fields
]
STDIN = "".join(json.dumps(r) + "\n" for r in RECS)
RESTORE = ["restore", "--mapping-field", "map", "--on-error", "record", "-q"]  # a stage that needs no model


def jsonl(tmp_path) -> list[dict]:
    r = ppt(*RESTORE, "-o", str(tmp_path / "ref.jsonl"), stdin=STDIN)
    assert r.returncode == 1, r.stderr
    return [json.loads(x) for x in (tmp_path / "ref.jsonl").read_text().splitlines()]


def test_jsonl_gz_is_the_same_lines_compressed(tmp_path):
    out = tmp_path / "out.jsonl.gz"
    r = ppt(*RESTORE, "-o", str(out), stdin=STDIN)
    assert r.returncode == 1, r.stderr
    assert [json.loads(x) for x in gzip.decompress(out.read_bytes()).decode().splitlines()] == jsonl(tmp_path)


def test_csv_has_every_field_of_every_record_nested_values_as_json(tmp_path):
    out = tmp_path / "out.csv"
    assert ppt(*RESTORE, "-o", str(out), stdin=STDIN).returncode == 1
    rows = list(csv.DictReader(out.open()))
    ref = jsonl(tmp_path)
    assert list(rows[0]) == list(dict.fromkeys(k for rec in ref for k in rec))  # the union, first-seen order
    assert rows[0]["text"] == "the river is wide" and rows[0]["meta"] == ""
    assert json.loads(rows[1]["meta"]) == {"a": [1, 2]} and json.loads(rows[1]["ppt"]) == ref[1]["ppt"]
    assert json.loads(rows[2]["error"])["line"] == 3 and rows[2]["text"] == ""


def test_parquet_types_and_round_trip(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "out.parquet"
    assert ppt(*RESTORE, "-o", str(out), stdin=STDIN).returncode == 1
    table = pq.read_table(out)
    types = {f.name: str(f.type) for f in table.schema}
    assert types["id"] == "int64" and types["n"] == "double" and types["text"] == "string"
    assert types["meta"] == "string" and types["ppt"] == "string"  # nested values as JSON text
    dry = [
        "query",
        "--dry-run",
        "--allow-raw",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "-q",
        "--output-field",
        "answer",
    ]
    back = ppt(*dry, "--on-error", "record", "-i", str(out), stdin="")
    got = [json.loads(x) for x in back.stdout.splitlines()]
    # the ppt stamp reads back as an object (a JSON-text ppt field would fail every record)
    prompts = [g["request"]["body"]["messages"][-1]["content"] for g in got[:2]]
    assert "the river is wide" in prompts[0] and "call me at noon" in prompts[1]


def test_an_aborted_run_leaves_no_file_and_an_unknown_format_is_refused(tmp_path):
    out = tmp_path / "out.csv"
    r = ppt("restore", "--mapping-field", "map", "-o", str(out), stdin=STDIN)  # --on-error fail at line 3
    assert r.returncode == 1 and out.exists()  # earlier output committed, as for JSONL
    zst = ppt(*RESTORE, "-o", str(tmp_path / "out.jsonl.zst"), stdin=STDIN)
    if zstd_writer() is None:  # without the package: refused before any record, naming what is missing
        assert zst.returncode == 78 and "cannot write jsonl.zst" in zst.stderr and "zstandard" in zst.stderr
        assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # no temp file left
    else:
        assert zst.returncode == 1 and (tmp_path / "out.jsonl.zst").exists()
    from ppt.io import PptError
    from ppt.io.output_formats import formatted
    from ppt.io.sinks import Sink

    with pytest.raises(PptError) as err:
        formatted(Sink(), "xml", "out.xml")
    assert err.value.exit_code == 2 and "cannot write xml" in err.value.message


def zstd_writer():
    """The zstd module ppt writes with here (the standard library's from 3.14, else zstandard), or None."""
    for name in ("compression.zstd", "zstandard"):
        try:
            return __import__(name)
        except ImportError:
            pass
    return None


def test_progress_total_is_known_for_plain_files_and_parquet(tmp_path):
    """issue 26: the bar showed "2048rec" with no total or ETA; a file's record count is known cheaply."""
    from ppt.io.stream import records_in

    f = tmp_path / "in.jsonl"
    f.write_text('{"text": "a"}\n{"text": "b"}\n{"text": "c"}')  # no final newline: still three
    assert records_in(str(f)) == 3 and records_in("-") is None
    assert records_in(str(tmp_path / "missing.jsonl")) is None
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.table({"text": ["a", "b"]}), tmp_path / "in.parquet")
    assert records_in(str(tmp_path / "in.parquet")) == 2
