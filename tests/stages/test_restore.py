"""--mapping and `ppt restore` (issue 25): the real values come back into an answer about surrogates, and the
mapping stays local."""

from __future__ import annotations

import json
import os

from ppt.lm.templates import Template
from ppt.stages.query import QuerySpec, check_sanitized
from ppt.stages.restore import restore_text
from tests.helpers import ppt


def test_restore_text_whole_words_case_insensitive_longest_first_and_never_ambiguous():
    mapping = [
        {"surrogate": "Grand", "original": "Alice"},
        {"surrogate": "Grand Hotel", "original": "Alice Smith"},
        {"surrogate": "gmt", "original": "Alice"},
        {"surrogate": "twin", "original": "Bob"},
        {"surrogate": "twin", "original": "Carl"},  # one surrogate, two originals: left as it is
    ]
    text = "GRAND HOTEL met grand and Grandma at gmt; the twin left."
    out, n = restore_text(text, mapping)
    assert out == "Alice Smith met Alice and Grandma at Alice; the twin left." and n == 3
    assert restore_text("nothing here", []) == ("nothing here", 0)


def test_restore_text_puts_back_a_surrogate_the_model_made_plural():
    """A model answering about the surrogate "author" writes "authors" (seen in bench/pii's answers): the
    original comes back as the prompt had it; a longer word that merely starts with the surrogate does not."""
    mapping = [{"surrogate": "author", "original": "officials"}, {"surrogate": "Floyd", "original": "Weber"}]
    out, n = restore_text("The authors met Floyd's family, the Floyds and an Authorship board.", mapping)
    assert out == "The officials met Weber's family, the Weber and an Authorship board." and n == 3
    assert restore_text("<PERSON_1>s", [{"surrogate": "<PERSON_1>", "original": "Ann"}])[0] == "Anns"


def test_sanitize_mapping_query_refusal_and_restore_end_to_end(tmp_path):
    deny = tmp_path / "deny.txt"
    deny.write_text("alice\nparis\n")
    rec = {"id": 1, "text": "Alice moved to Paris in 2019 with Alice her friend."}
    out_file = tmp_path / "private.jsonl"
    r = ppt(
        "sanitize",
        "-m",
        "santext",
        "--space",
        "glove-6b-50d:2000",
        "-e",
        "0.5",
        "--seed",
        "2",
        "--protect",
        "detected",
        "--deny",
        str(deny),
        "--mapping",
        "map",
        "-o",
        str(out_file),
        stdin=json.dumps(rec) + "\n",
    )
    assert r.returncode == 0, r.stderr
    assert oct(os.stat(out_file).st_mode & 0o777) == "0o600"  # it holds the raw values
    san = json.loads(out_file.read_text())
    assert "Alice" not in san["text"] and "Paris" not in san["text"] and "Alice" not in r.stderr
    assert san["ppt"]["sanitize"]["mapping_field"] == "map"
    assert sorted(m["original"] for m in san["map"]) == ["Alice", "Alice", "Paris"]
    assert all(m["surrogate"] in san["text"] for m in san["map"])
    # the mapping never leaves the machine
    err = check_sanitized(san, QuerySpec(model="m", template=Template.parse("{map}")))
    assert err is not None and err.type == "raw_field_in_template"
    # an answer that talks about the surrogates, restored
    first = san["map"][0]["surrogate"]
    san["generation"] = f"{first} sounds happy: {san['text']}"
    back = ppt("restore", stdin=json.dumps(san) + "\n")
    assert back.returncode == 0, back.stderr
    restored = json.loads(back.stdout)
    assert restored["restored"].startswith("Alice sounds happy: Alice moved to Paris")
    assert restored["ppt"]["restore"]["replaced"] >= 4
    missing = ppt("restore", stdin=json.dumps({"id": 2, "generation": "x"}) + "\n")
    assert missing.returncode == 1 and "no mapping field" in missing.stderr


def test_mapping_needs_protect_detected():
    r = ppt("sanitize", "--mapping", "map", stdin='{"text": "a"}\n')
    assert r.returncode == 2 and "need --protect detected" in r.stderr


def test_a_placeholder_inside_brackets_and_one_value_written_in_two_cases_come_back_exactly():
    from ppt.stages.restore import restore_text

    mapping = [
        {"surrogate": "<PERSON_1>", "original": "Derek Voss"},
        {"surrogate": "<EMAIL_ADDRESS_1>", "original": "d.voss@example.org"},
        {"surrogate": "<IMMIGRATION_1>", "original": "Green Card"},
        {"surrogate": "<IMMIGRATION_1>", "original": "green card"},  # the same value: one placeholder
    ]
    text = "From: <PERSON_1> <<EMAIL_ADDRESS_1>>; my <IMMIGRATION_1> came"
    assert restore_text(text, mapping) == ("From: Derek Voss <d.voss@example.org>; my Green Card came", 3)
    two = [{"surrogate": "<PERSON_1>", "original": "Ann"}, {"surrogate": "<PERSON_1>", "original": "Bo"}]
    assert restore_text("<PERSON_1> left", two) == ("<PERSON_1> left", 0)  # two values: ambiguous, left alone
