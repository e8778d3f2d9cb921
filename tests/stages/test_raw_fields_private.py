"""Every field that holds raw values (--mapping, --keep-original, --emit-alignment, --diagnostics, Split-N-Denoise's
local-only vectors, a restored answer) keeps the next command's -o file 0600 (issue 37, item 2)."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("httpx")

from ppt.io.stream import reveals_raw  # noqa: E402
from ppt.testing import EchoService, loopback  # noqa: E402
from tests.helpers import ppt  # noqa: E402

MAP = [{"surrogate": "Nicolas Sullivan", "original": "Maria Lopez"}]


def record(field: str, stamp_key: str) -> dict:
    return {
        "id": 1,
        "text": "Nicolas Sullivan lives in Leeds.",
        field: MAP if field == "map" else {"raw": "Maria Lopez"},
        "ppt": {"sanitize": {"mechanism": "surrogate", "text_field": "text", stamp_key: field}},
    }


def mode(path) -> str:
    return oct(os.stat(path).st_mode & 0o777)


@pytest.mark.parametrize(
    ("field", "stamp_key"),
    [("map", "mapping_field"), ("diag", "diagnostics_field"), ("raw", "keep_original"), ("al", "alignment_field")],
)
def test_query_o_keeps_a_raw_field_private(tmp_path, field, stamp_key):
    out = tmp_path / "q.jsonl"
    with loopback(EchoService()) as (_, url):
        r = ppt(
            "query",
            "--model",
            "m",
            "--base-url",
            url,
            "-o",
            str(out),
            stdin=json.dumps(record(field, stamp_key)) + "\n",
        )
    assert r.returncode == 0, r.stderr
    assert field in json.loads(out.read_text())  # the raw field travels on ...
    assert mode(out) == "0o600"  # ... in a file only its owner reads


def test_restore_o_is_private(tmp_path):
    rec = {**record("map", "mapping_field"), "generation": "Nicolas Sullivan is a teacher."}
    out = tmp_path / "r.jsonl"
    r = ppt("restore", "-o", str(out), stdin=json.dumps(rec) + "\n")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["restored"] == "Maria Lopez is a teacher." and mode(out) == "0o600"


def test_reveals_raw_knows_every_raw_field():
    for field, key in (("map", "mapping_field"), ("diag", "diagnostics_field"), ("raw", "keep_original")):
        assert reveals_raw(record(field, key))
        assert not reveals_raw({k: v for k, v in record(field, key).items() if k != field})  # field dropped
    snd = {"id": 1, "snd_clean": [0.1], "ppt": {"snd": {"privacy": {"local_only": ["snd_clean"]}}}}
    assert reveals_raw(snd) and not reveals_raw({"id": 1, "ppt": snd["ppt"]})
    restored = {"id": 1, "restored": "Maria Lopez", "ppt": {"restore": {"field": "generation"}}}
    assert reveals_raw(restored)
    assert not reveals_raw({"id": 1, "text": "x", "ppt": {"sanitize": {"mechanism": "tem"}}})


def test_ray_shards_turn_private_on_a_raw_field(tmp_path):
    from ppt.exec.ray import _reveals_raw_line
    from ppt.exec.shards import ShardWriter

    assert _reveals_raw_line(json.dumps(record("map", "mapping_field")).encode())
    assert not _reveals_raw_line(b'{"id": 1, "text": "x", "ppt": {"sanitize": {"mechanism": "tem"}}}')
    writer = ShardWriter(tmp_path, 2)
    writer.write(0, b'{"id": 0}\n')
    writer.mark_private()  # the first shard was already open, world-readable
    writer.write(1, b'{"id": 1}\n')
    names = writer.commit()
    assert [mode(tmp_path / n) for n in names] == ["0o600", "0o600"]


def test_an_existing_world_readable_file_is_narrowed(tmp_path):
    out = tmp_path / "q.jsonl"
    out.write_text("old\n")
    os.chmod(out, 0o644)
    with loopback(EchoService()) as (_, url):
        r = ppt(
            "query",
            "--model",
            "m",
            "--base-url",
            url,
            "-o",
            str(out),
            stdin=json.dumps(record("map", "mapping_field")) + "\n",
        )
    assert r.returncode == 0, r.stderr
    assert mode(out) == "0o600"
    r = ppt("restore", "-o", str(out), stdin=json.dumps({**record("map", "mapping_field"), "generation": "x"}) + "\n")
    assert r.returncode == 0, r.stderr
    assert mode(out) == "0o600"
