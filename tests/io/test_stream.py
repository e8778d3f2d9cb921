"""ppt.io.stream: run_stream reads, validates, batches and writes JSONL in order, with the --on-error policies."""

from __future__ import annotations

import re

import orjson
import pytest

from ppt.io import ExitCode, PptError, RecordError
from tests.io.helpers import jl, run

SECRET = "ZQX-secret-4711"


# --------------------------------------------------------------------------- reading


def test_identity_and_passthrough():
    data = jl({"id": "a", "text": "hi", "extra": {"x": [1, 2]}, "n": 1.5}, {"text": "yo", "z": None})
    code, out, err = run(data)
    assert code == ExitCode.OK
    assert out[0] == {"id": "a", "text": "HI", "extra": {"x": [1, 2]}, "n": 1.5, "rid": "a"}
    assert out[1] == {"text": "YO", "z": None, "rid": 1}
    assert "2 ok" in err
    assert re.search(r"2 ok in \d+\.\d s(, [\d,]+ records/s)?$", err.strip())  # elapsed time and rate


def test_blank_lines_crlf_and_no_trailing_newline():
    data = b'\n  \n{"text":"a"}\r\n\t\r\n{"text":"b"}\r\n\n{"text":"c"}'
    code, out, _ = run(data)
    assert code == 0
    assert [o["text"] for o in out] == ["A", "B", "C"]
    # ids are the 0-based physical line numbers, so they do not move when blank lines change
    assert [o["rid"] for o in out] == [2, 4, 6]


def test_bom_on_first_line():
    code, out, _ = run(b'\xef\xbb\xbf{"text":"a"}\n')
    assert code == 0 and out[0]["text"] == "A"


def test_ten_megabyte_line():
    big = "x" * (10 * 1024 * 1024)
    code, out, _ = run(jl({"text": big}, {"text": "small"}))
    assert code == 0
    assert len(out[0]["text"]) == len(big) and out[1]["text"] == "SMALL"


def test_custom_fields_and_null_id():
    data = jl({"uid": 7, "body": "x"}, {"uid": None, "body": "y"})
    code, out, _ = run(data, text_field="body", id_field="uid", fn=lambda b: [{"id": r.id, "t": r.text} for r in b])
    assert code == 0
    assert out == [{"id": 7, "t": "x"}, {"id": 1, "t": "y"}]


def test_require_text_false():
    seen = []

    def fn(batch):
        seen.extend(r.text for r in batch)
        return [r.data for r in batch]

    code, out, _ = run(jl({"a": 1}, {"text": 3}, {"text": "s"}), fn=fn, require_text=False)
    assert code == 0 and len(out) == 3 and seen == [None, None, "s"]


# --------------------------------------------------------------------------- bad lines

BAD_LINES = {
    "malformed_json": b'{"text": "' + SECRET.encode() + b'" oops ' + SECRET.encode() + b"}",
    "not_an_object": b'["' + SECRET.encode() + b'"]',
    "missing_text_field": b'{"body": "' + SECRET.encode() + b'"}',
    "text_not_string": b'{"text": ["' + SECRET.encode() + b'"]}',
    "empty_text": b'{"text": "   ", "note": "' + SECRET.encode() + b'"}',
    "invalid_utf8": b'{"text": "' + SECRET.encode() + b'\xff\xfe"}',
}


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
@pytest.mark.parametrize("mode", ["fail", "skip", "record"])
def test_bad_line_modes(kind, mode):
    data = jl({"text": "before"}) + BAD_LINES[kind] + b"\n" + jl({"text": "after"})
    code, out, err = run(data, on_error=mode)
    assert SECRET not in err
    assert SECRET not in orjson.dumps(out).decode()
    if mode == "fail":
        assert code == ExitCode.DATAERR
        assert [o["text"] for o in out] == ["BEFORE"]  # what came before is flushed
        assert err.startswith("ppt: error: line 2: ")
        assert kind in err
    elif mode == "skip":
        assert code == ExitCode.SOME_FAILED
        assert [o["text"] for o in out] == ["BEFORE", "AFTER"]
        assert "1 skipped" in err and kind in err and "line 2" in err
    else:
        assert code == ExitCode.SOME_FAILED
        assert out[0]["text"] == "BEFORE" and out[2]["text"] == "AFTER"
        rec = out[1]
        assert set(rec) == {"id", "error"}
        assert rec["error"]["type"] == kind and rec["error"]["line"] == 2
        assert rec["id"] is None  # no id in the bad line: null, never a line index that could collide


def test_malformed_json_message_names_column():
    code, out, err = run(b'{"text": x}\n')
    assert code == 65
    assert "line 1: malformed JSON" in err and "column" in err


def test_error_record_uses_record_id_when_parsable():
    code, out, _ = run(jl({"id": "doc-9", "text": ""}), on_error="record")
    assert code == 1 and out == [
        {"id": "doc-9", "error": {"type": "empty_text", "message": "text field 'text' is empty", "line": 1}}
    ]


def test_quiet_suppresses_summary_not_errors():
    code, _, err = run(jl({"text": "a"}), quiet=True)
    assert code == 0 and err == ""
    code, _, err = run(b"nope\n", quiet=True)
    assert code == 65 and "ppt: error: line 1" in err


# --------------------------------------------------------------------------- order and batching


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_order_preserved_with_interleaved_errors(batch_size):
    lines = []
    for i in range(50):
        lines.append(b"garbage" if i % 7 == 3 else orjson.dumps({"id": i, "text": f"t{i}"}))
    data = b"\n".join(lines) + b"\n"
    sizes = []

    def fn(batch):
        sizes.append(len(batch))
        return [{"id": r.id} for r in batch]

    code, out, err = run(data, fn=fn, on_error="record", batch_size=batch_size)
    assert code == 1
    assert [o["id"] for o in out] == [None if i % 7 == 3 else i for i in range(50)]
    assert [o["error"]["line"] for o in out if "error" in o] == [i + 1 for i in range(50) if i % 7 == 3]
    assert max(sizes) <= batch_size
    assert "failed" in err and "malformed_json x7" in err


def test_processing_errors_in_place_and_fail_mode():
    def fn(batch):
        return [RecordError("too_long", "text exceeds limit") if r.id == 2 else {"id": r.id} for r in batch]

    data = jl(*({"id": i, "text": "t"} for i in range(5)))
    code, out, _ = run(data, fn=fn, on_error="record", batch_size=2)
    assert code == 1 and [o["id"] for o in out] == [0, 1, 2, 3, 4]
    assert out[2]["error"] == {"type": "too_long", "message": "text exceeds limit", "line": 3}

    code, out, err = run(data, fn=fn, on_error="skip", batch_size=2)
    assert code == 1 and [o["id"] for o in out] == [0, 1, 3, 4]

    code, out, err = run(data, fn=fn, on_error="fail", batch_size=10)
    assert code == ExitCode.SOME_FAILED and [o["id"] for o in out] == [0, 1]
    assert "ppt: error: line 3: text exceeds limit" in err


def test_batch_level_record_error_applies_to_each():
    def fn(batch):
        raise RecordError("backend_down", "backend refused the batch")

    code, out, _ = run(jl({"text": "a"}, {"text": "b"}), fn=fn, on_error="record")
    assert code == 1 and [o["error"]["type"] for o in out] == ["backend_down"] * 2


def test_ppt_error_propagates():
    def fn(batch):
        raise PptError("endpoint gone", ExitCode.UNAVAILABLE)

    with pytest.raises(PptError) as ei:
        run(jl({"text": "a"}), fn=fn)
    assert ei.value.exit_code == 69


def test_wrong_result_count_is_a_bug():
    with pytest.raises(RuntimeError):
        run(jl({"text": "a"}), fn=lambda b: [])


def test_bad_options():
    with pytest.raises(PptError) as ei:
        run(b"", on_error="ignore")
    assert ei.value.exit_code == ExitCode.USAGE
    with pytest.raises(PptError):
        run(b"", batch_size=0)


def test_empty_input():
    code, out, err = run(b"")
    assert code == 0 and out == [] and "0 ok" in err


def test_many_bad_lines_bounded_window():
    data = b"bad\n" * 3000 + jl({"text": "ok"})
    code, out, err = run(data, on_error="skip", batch_size=4)
    assert code == 1 and out == [{"text": "OK", "rid": 3000}]
    assert "3000 skipped" in err


def test_a_lone_surrogate_beside_a_big_integer_fails_its_line_alone():
    """Reliability probe P-D1: the big-integer fallback parser accepted lone surrogates, which then crashed the
    output (no -o file, the rest of the run lost). The line now fails alone as invalid UTF-8, naming its line."""
    big = "1" * 25
    bad = '{"id": 2, "n": ' + big + ', "text": "a\\ud800b"}'
    data = jl({"id": 1, "text": "hi"}) + bad.encode() + b"\n" + jl({"id": 3, "text": "yo"})
    code, out, err = run(data, on_error="record")
    assert code == ExitCode.SOME_FAILED
    assert out[0]["text"] == "HI" and out[2]["text"] == "YO"
    assert out[1]["error"]["type"] == "invalid_utf8" and out[1]["error"]["line"] == 2 and "ud800" not in err


def test_a_dotted_text_field_reads_and_writes_inside_nested_objects():
    """Issue 26: `--text-field msg.body` was "missing text field 'msg.body'"."""
    from ppt.io.fields import assign, lookup

    rec = {"msg": {"body": "hi", "to": "x"}, "n": 1}
    assert lookup(rec, "msg.body") == (True, "hi") and lookup(rec, "msg.cc") == (False, None)
    out = assign(rec, "msg.body", "HI")
    assert out == {"msg": {"body": "HI", "to": "x"}, "n": 1} and rec["msg"]["body"] == "hi"  # the input is untouched
    assert assign({"a.b": 1}, "a.b", 2) == {"a.b": 2}  # an exact key wins over nesting
    code, out, err = run(
        jl({"id": 1, "msg": {"body": "hi"}}, {"id": 2, "msg": {}}), text_field="msg.body", on_error="record"
    )
    assert code == ExitCode.SOME_FAILED and out[0]["rid"] == 1 and out[0]["text"] == "HI"
    assert out[1]["error"]["type"] == "missing_text_field"
