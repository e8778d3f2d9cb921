"""ppt.io.jsonl's side-file readers (corpus, pairs, vectors): line numbers in errors, never content."""

import pytest

from ppt.io import ExitCode, PptError
from ppt.io.jsonl import open_side_file, read_file_lines, read_objects


def test_read_objects_skips_blank_lines_and_numbers_the_rest():
    lines = [b'{"a": 1}', b"  ", b'{"a": 2}']
    assert list(read_objects(lines, "f")) == [(1, {"a": 1}), (3, {"a": 2})]


@pytest.mark.parametrize(
    "line, message", [(b'{"secret text', "line 2 is not JSON"), (b'["secret text"]', "line 2 is not a JSON object")]
)
def test_a_bad_line_is_a_data_error_that_names_the_line_not_its_content(line, message):
    with pytest.raises(PptError) as e:
        list(read_objects([b"{}", line], "corpus.jsonl"))
    assert e.value.exit_code == ExitCode.DATAERR and str(e.value).startswith(f"corpus.jsonl: {message}")
    assert "secret" not in str(e.value)


def test_a_missing_file_is_noinput(tmp_path):
    for fn in (lambda p: open_side_file(p, "the corpus"), lambda p: read_file_lines(p, "the corpus")):
        with pytest.raises(PptError) as e:
            fn(str(tmp_path / "nope.jsonl"))
        assert e.value.exit_code == ExitCode.NOINPUT and "the corpus" in str(e.value)
    (tmp_path / "ok.jsonl").write_bytes(b'{"a": 1}\n\n')
    assert read_file_lines(str(tmp_path / "ok.jsonl")) == [b'{"a": 1}', b""]


def test_jsonl_corpus_prefixes_use_the_side_file_reader(tmp_path):
    from ppt.experiments.corpora import jsonl_prefixes

    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"text": "one two three"}\n\n{"id": "b", "text": "four", "label": "x"}\n{"text": "five"}\n')
    docs = jsonl_prefixes(str(path), "text", 2, 50)
    assert docs == [{"id": 0, "text": "one two three", "label": None}, {"id": "b", "text": "four", "label": "x"}]
    path.write_bytes(b'{"text": "ok"}\n{"body": "secret words"}\n')
    with pytest.raises(PptError) as e:
        jsonl_prefixes(str(path), "text", 5, 50)
    assert e.value.exit_code == ExitCode.DATAERR and "line 2" in str(e.value) and "secret" not in str(e.value)
