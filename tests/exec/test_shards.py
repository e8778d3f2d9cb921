"""Shard rules of cluster runs, without any engine: input resolution and order, output naming, the output
directory, the shard writer, and the line numbering that makes a cluster run equal to a local one."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ppt.exec.shards import (
    SUMMARY_NAME,
    ShardWriter,
    output_name,
    prepare_output_dir,
    resolve_inputs,
    shard_format,
)
from ppt.io import ExitCode, PptError


def _touch(path, text="{}\n"):
    path.write_text(text)
    return path


def test_output_names_sort_in_input_order():
    assert [output_name(i, 3) for i in range(3)] == ["part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"]
    for n in (12, 100_001, 2_000_000):  # zero-padded to the run's width: `cat part-*` keeps input order
        names = [output_name(i, n) for i in (0, 1, 9, 10, 99999, n - 1) if i < n]
        assert names == sorted(names) and len({len(x) for x in names}) == 1


def test_glob_and_directory_resolve_sorted_and_numbered(tmp_path):
    for name in ("b.jsonl", "a.jsonl", "c.parquet", "notes.txt", ".hidden.jsonl", "_SUCCESS.json"):
        _touch(tmp_path / name)
    shards = resolve_inputs(str(tmp_path))
    assert [os.path.basename(s.path) for s in shards] == ["a.jsonl", "b.jsonl", "c.parquet"]
    assert [s.index for s in shards] == [0, 1, 2] and [s.fmt for s in shards] == ["jsonl", "jsonl", "parquet"]
    globbed = resolve_inputs(str(tmp_path / "*.jsonl"))
    assert [os.path.basename(s.path) for s in globbed] == ["a.jsonl", "b.jsonl"]
    single = resolve_inputs(str(tmp_path / "b.jsonl"))
    assert len(single) == 1 and single[0].index == 0
    assert shard_format("x.PARQUET") == "parquet" and shard_format("x.ndjson") == "jsonl"


@pytest.mark.parametrize(
    "spec, code", [("-", ExitCode.USAGE), ("", ExitCode.USAGE), ("/nonexistent/x.jsonl", ExitCode.NOINPUT)]
)
def test_bad_inputs_are_refused(spec, code):
    with pytest.raises(PptError) as e:
        resolve_inputs(spec)
    assert e.value.exit_code == code


def test_empty_glob_and_directory_are_noinput(tmp_path):
    for spec in (str(tmp_path), str(tmp_path / "*.jsonl")):
        with pytest.raises(PptError) as e:
            resolve_inputs(spec)
        assert e.value.exit_code == ExitCode.NOINPUT


def test_output_dir_rules(tmp_path):
    with pytest.raises(PptError) as e:
        prepare_output_dir("-")
    assert e.value.exit_code == ExitCode.USAGE
    f = _touch(tmp_path / "file.jsonl")
    with pytest.raises(PptError) as e:
        prepare_output_dir(str(f))
    assert e.value.exit_code == ExitCode.USAGE
    new = prepare_output_dir(str(tmp_path / "new" / "out"))
    assert new.is_dir()
    _touch(new / output_name(0))
    _touch(new / SUMMARY_NAME)
    assert prepare_output_dir(str(new)) == new  # a previous run's shards are replaced
    _touch(new / "mine.txt")
    with pytest.raises(PptError) as e:
        prepare_output_dir(str(new))  # never overwrite what this tool did not write
    assert e.value.exit_code == ExitCode.CONFIG


def test_a_killed_runs_temp_files_are_removed_not_refused(tmp_path, monkeypatch):
    """Reliability probe P-m11: a SIGKILL of the driver left `.part-00000.jsonl.<rand>` behind, and every
    later run into the directory failed with 78 ("holds files this run did not write"). Those names are
    ShardWriter's own (and the summary's temp file): removed with a note; anything else still refuses."""
    import ppt.log

    notes: list[str] = []
    monkeypatch.setattr(ppt.log, "note", notes.append)
    out = prepare_output_dir(str(tmp_path / "out"))
    w = ShardWriter(out, 12)
    for i in (0, 11):
        w.write(i, b"{}\n")
    for fd, _ in w._files.values():  # killed: no commit, no abort
        os.close(fd)
    _touch(out / f".{SUMMARY_NAME}.tmp")
    _touch(out / output_name(3, 12))  # a previous run's shard: kept until this run's commit replaces it
    left = sorted(p.name for p in out.iterdir() if p.name.startswith("."))
    assert len(left) == 3 and left[0].startswith(".part-00000.jsonl.")
    assert prepare_output_dir(str(out)) == out
    assert sorted(p.name for p in out.iterdir()) == [output_name(3, 12)]
    assert len(notes) == 1 and "removed 3 temp file(s)" in notes[0] and left[0] in notes[0]
    for name in (".part-00000.jsonl.notes-of-mine", ".part-1.jsonl.abcdefgh", ".summary.json.bak", "x.tmp"):
        _touch(out / name)
        with pytest.raises(PptError) as e:
            prepare_output_dir(str(out))  # a near miss is not ours: still refused, and kept
        assert e.value.exit_code == ExitCode.CONFIG and (out / name).exists()
        (out / name).unlink()


def test_writer_commits_every_shard_and_drops_stale_ones(tmp_path):
    _touch(tmp_path / output_name(5), "old\n")  # a previous run had more shards
    w = ShardWriter(tmp_path, 3)
    w.write(2, b"c\n")
    w.write(0, b"a1\n")
    w.write(0, b"a2\n")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [output_name(5)]
    assert w.commit() == [output_name(i, 3) for i in range(3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [output_name(i) for i in range(3)]
    assert (tmp_path / output_name(0)).read_bytes() == b"a1\na2\n"
    assert (tmp_path / output_name(1)).read_bytes() == b""  # a shard with no output still exists
    assert (tmp_path / output_name(2)).read_bytes() == b"c\n"


def test_writer_abort_leaves_nothing_and_private_is_0600(tmp_path):
    w = ShardWriter(tmp_path, 2, private=True)
    w.write(0, b"x\n")
    w.abort()
    assert list(tmp_path.iterdir()) == []
    w = ShardWriter(tmp_path, 1, private=True)
    w.write(0, b"x\n")
    w.commit()
    assert stat.S_IMODE((tmp_path / output_name(0)).stat().st_mode) == 0o600


def test_line_numbers_continue_across_shards_like_cat(tmp_path):
    """A record without an id gets its line in the concatenated input as its id, as a local run over
    `cat` of the shards gives it; blank lines count, and a last line without a newline too."""
    from ppt.exec.ray import count_rows, shard_rows
    from ppt.io import StreamArgs, parse_line
    from ppt.io.jsonl import iter_lines

    texts = ['{"text":"a"}\n\n{"text":"b"}\n', '{"text":"c"}\n{"text":"d"}', '\n{"text":"e"}\n']
    paths = [_touch(tmp_path / f"s{i}.jsonl", t) for i, t in enumerate(texts)]
    start, rows = 0, []
    for i, p in enumerate(paths):
        rows += list(shard_rows(str(p), "jsonl", i, start))
        start += count_rows(str(p), "jsonl")
    cat = "".join(t if t.endswith("\n") else t + "\n" for t in texts).encode()
    import io

    local = list(iter_lines(io.BytesIO(cat)))
    assert [(r["line_no"], r["raw"]) for r in rows] == local
    opts = StreamArgs()
    assert [parse_line(r["raw"], r["line_no"], opts).id for r in rows] == [0, 2, 3, 4, 6]
    assert [r["shard"] for r in rows] == [0, 0, 1, 1, 2]


def test_parquet_rows_become_json_lines(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from ppt.exec.ray import count_rows, shard_rows

    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "text": ["hello there", "general kenobi"], "n": [1, 2]}), path)
    assert count_rows(str(path), "parquet") == 2
    rows = list(shard_rows(str(path), "parquet", 3, 10))
    assert [(r["shard"], r["line_no"]) for r in rows] == [(3, 11), (3, 12)]
    assert [json.loads(r["raw"]) for r in rows] == [
        {"id": "a", "text": "hello there", "n": 1},
        {"id": "b", "text": "general kenobi", "n": 2},
    ]
