"""--protect detected (issue 25, first slice): only detected spans are replaced, the rest passes verbatim, and
the stamp says the undetected text is unprotected."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ppt.detect import Span, build_detector, merge_spans
from ppt.detect.lists import PhraseDetector
from ppt.io import ExitCode, PptError
from ppt.mechanisms.protect import detected_pieces
from ppt.spaces.tokens import TokenBatch, Tokens
from tests.helpers import ppt

TEXT = "Alice Johnson moved to Paris in 2019, said Dr. Alice."


def test_phrase_detector_finds_whole_words_case_insensitively_longest_first():
    det = PhraseDetector(["alice", "Alice Johnson", "paris"])
    [spans] = det.detect([TEXT])
    assert [TEXT[s.start : s.end] for s in spans] == ["Alice Johnson", "Paris", "Alice"]
    assert det.detect(["Malice in Parisian"]) == [[]]  # word boundaries
    assert det.signature == "deny"  # nothing of the (secret) list: issue 37


def test_merge_and_allow_list(tmp_path):
    assert merge_spans([Span(5, 9, "A"), Span(0, 6, "B"), Span(10, 12, "C")]) == [Span(0, 9, "B"), Span(10, 12, "C")]
    deny, allow = tmp_path / "deny.txt", tmp_path / "allow.txt"
    deny.write_text("# names\nalice\nparis\n")
    allow.write_text("Paris\n")
    det = build_detector([], deny=str(deny), allow=str(allow))
    [spans] = det.detect([TEXT])
    assert [TEXT[s.start : s.end] for s in spans] == ["Alice", "Alice"]
    assert "-allow-" in det.signature
    with pytest.raises(PptError) as e:
        build_detector(["telepathy"])
    assert e.value.exit_code == ExitCode.USAGE
    with pytest.raises(PptError) as e:
        build_detector([], deny=str(tmp_path / "missing.txt"))
    assert e.value.exit_code == ExitCode.NOINPUT


def test_pieces_overlapping_a_span_are_the_detected_ones():
    lead = ["", " ", " ", " "]
    core = ["Alice", "met", "Bob", "."]
    tok = Tokens(lead=lead, core=core, rows=np.array([0, 1, 2, -1]), kinds=["word", "word", "word", "punct"])
    tb = TokenBatch.concat([tok, tok])
    inside = detected_pieces(tb, [[Span(0, 5, "X")], [Span(10, 13, "X")]])
    assert inside.tolist() == [True, False, False, False, False, False, True, False]


def recs(texts):
    return "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts))


def test_cli_replaces_only_the_denied_words_and_stamps_the_rest_unprotected(tmp_path):
    deny = tmp_path / "deny.txt"
    deny.write_text("river\nmoney\n")
    texts = ["the river bank holds money for the town", "a quiet town near the water"]
    args = ["sanitize", "-m", "santext", "--space", "glove-6b-50d:2000", "-e", "0.5", "--seed", "3"]
    r = ppt(*args, "--protect", "detected", "--deny", str(deny), "--keep-original", "raw", stdin=recs(texts))
    assert r.returncode == 0, r.stderr
    out = [json.loads(line) for line in r.stdout.splitlines()]
    first = out[0]["text"].split()
    assert first[0] == "the" and first[2:4] == ["bank", "holds"] and first[5:] == ["for", "the", "town"]
    assert first[1] != "river" or first[4] != "money"  # the denied words were resampled (eps 0.5: almost surely)
    assert out[1]["text"] == texts[1]  # nothing detected: verbatim
    block = out[0]["ppt"]["sanitize"]
    assert "|protect:deny-" in block["signature"]
    assert "undetected" in block["privacy"]["unprotected_by_policy"] and block["privacy"]["proven"]["eps"] == "inf"
    assert block["privacy"]["proven"]["tokens"] == 2  # the two denied words carry the mechanism's events
    # without --protect detected the same run perturbs everything and says nothing about detection
    plain = json.loads(ppt(*args, stdin=recs(texts[:1])).stdout.splitlines()[0])
    assert "protect:" not in plain["ppt"]["sanitize"]["signature"]
    assert "undetected" not in plain["ppt"]["sanitize"]["privacy"].get("unprotected_by_policy", [])


def test_cli_usage_errors():
    r = ppt("sanitize", "--deny", "x.txt", stdin=recs(["a"]))
    assert r.returncode == 2 and "need --protect detected" in r.stderr
    r = ppt("sanitize", "--protect", "everything", stdin=recs(["a"]))
    assert r.returncode == 2 and "'everything' is not one of" in r.stderr


def test_library_detectors_that_are_not_installed_exit_78_with_the_install_command():
    import importlib.util

    from ppt.dist import pip_install

    if importlib.util.find_spec("presidio_analyzer") is None:
        r = ppt("sanitize", "--protect", "detected", "--detect", "patterns", stdin=recs(["a"]))
        assert r.returncode == ExitCode.CONFIG and pip_install("readable") in r.stderr
    if importlib.util.find_spec("spacy") is None:
        r = ppt("sanitize", "--protect", "detected", "--detect", "ner", stdin=recs(["a"]))
        assert r.returncode == ExitCode.CONFIG and "ppt models install en_core_web_md" in r.stderr


def test_patterns_detector_finds_emails_and_phones_offline():
    pytest.importorskip("presidio_analyzer")
    from ppt.detect.patterns import PatternDetector

    text = "Mail alice.j@example.com or call +1 415-555-0199 today."
    [spans] = PatternDetector().detect([text])
    found = {s.kind: text[s.start : s.end] for s in spans}
    assert found.get("EMAIL_ADDRESS") == "alice.j@example.com" and "555-0199" in found.get("PHONE_NUMBER", "")


@pytest.mark.slow  # seconds: the full suite (CI) runs it, the fast lane does not
def test_patterns_detector_loads_without_torch_or_transformers():
    """issue 25's cold start: presidio imports transformers and torch for recognizers ppt never uses (5 s of a
    one-record run); the patterns detector loads without them and still finds e-mails and phones."""
    import subprocess
    import sys

    pytest.importorskip("presidio_analyzer")
    code = (
        "import sys; from ppt.detect.patterns import PatternDetector; d = PatternDetector(); "
        "spans = d.detect(['mail maria@example.com or call +1 415 555 0199'])[0]; "
        "assert {s.kind for s in spans} >= {'EMAIL_ADDRESS', 'PHONE_NUMBER'}, spans; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; "
        "import torch; print('ok')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
