"""Typed placeholders under --protect detected (issue 25): detected spans become <KIND_n>, the same value the
same number, the rest verbatim; the stamp says what holds; the mapping restores the answer."""

from __future__ import annotations

import json

import pytest

from ppt.detect.lists import PhraseDetector
from ppt.io import PptError
from ppt.mechanisms import get_mechanism
from ppt.mechanisms.privacy import privacy_block
from ppt.rng import record_generator
from ppt.stages.restore import restore_text
from ppt.stages.sanitize_spec import SanitizeSpec

TEXT = "Maria Lopez, a nurse in Lyon, has diabetes; Maria Lopez asked about HIV."


def mech(numbered: bool = True):
    m = get_mechanism("placeholder", 1.0, numbered=numbered)
    m.detector = PhraseDetector(["Maria Lopez", "Lyon", "diabetes", "HIV"])
    return m


def test_spans_become_numbered_placeholders_and_the_rest_passes():
    [out] = mech().sanitize_batch([TEXT], [record_generator(None, 0)])
    assert out.text == "<DENY_1>, a nurse in <DENY_2>, has <DENY_3>; <DENY_1> asked about <DENY_4>."
    assert [m["original"] for m in out.mapping] == ["Maria Lopez", "Lyon", "diabetes", "Maria Lopez", "HIV"]
    assert out.accounting.n_perturbed == 5 and out.accounting.kept == {"undetected": 6}
    [plain] = mech(numbered=False).sanitize_batch([TEXT], [record_generator(None, 0)])
    assert plain.text.count("<DENY>") == 5


def test_stamp_states_the_conditional_zero_and_the_undetected_text():
    m = mech()
    [out] = m.sanitize_batch([TEXT], [record_generator(None, 0)])
    block = privacy_block(m, out.accounting)
    assert block["proven"]["eps"] == "inf" and "undetected" in block["unprotected_by_policy"]
    [cond] = block["conditional"]
    assert cond["eps_given"] == 0.0 and cond["tokens"] == 5 and "detected spans" in cond["given"]
    diag = privacy_block(m, out.accounting, diagnostics=True)
    assert sum(diag["unprotected"].values()) == 6  # the undetected words, counted locally only


def test_restore_puts_each_value_back():
    [out] = mech().sanitize_batch([TEXT], [record_generator(None, 0)])
    answer = "<DENY_1> should ask a doctor in <DENY_2> about <DENY_3> and <DENY_4>."
    restored, n = restore_text(answer, out.mapping)
    assert restored == "Maria Lopez should ask a doctor in Lyon about diabetes and HIV." and n == 4


def test_needs_protect_detected_and_takes_no_eps():
    with pytest.raises(PptError, match="--protect detected"):
        SanitizeSpec("placeholder").build_mechanism(quiet=True)
    with pytest.raises(ValueError, match="no eps"):
        get_mechanism("placeholder", 3.0)
    spec = SanitizeSpec("placeholder", protect="detected", detect=("categories",))
    m = spec.build_mechanism(quiet=True)
    [out] = m.sanitize_batch(["He has asthma."], [record_generator(None, 0)])
    assert out.text == "He has <HEALTH_1>." and json.dumps(out.mapping)


def test_readable_preset_from_the_cli_restores_through_ppt_restore(tmp_path):
    """`ppt sanitize --preset readable --deny ... --mapping map | (answer) | ppt restore`: the real values come
    back; explicit flags win over the preset."""
    from ppt.stages.sanitize_spec import with_preset
    from tests.helpers import ppt

    assert with_preset("readable", mech=None, protect=None) == ("placeholder", "detected")
    assert with_preset("readable", mech="custext+", protect=None) == ("custext+", "detected")
    assert with_preset(None, mech=None, protect=None) == ("rantext", "all")
    deny = tmp_path / "deny.txt"
    deny.write_text("Maria Lopez\nLyon\n")
    rec = {"id": 1, "text": "Maria Lopez lives in Lyon and has asthma."}
    r = ppt(
        "sanitize",
        "--preset",
        "readable",
        "--deny",
        str(deny),
        "--detect",
        "categories",
        "--mapping",
        "map",
        "-q",
        stdin=json.dumps(rec) + "\n",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["text"] == "<DENY_1> lives in <DENY_2> and has <HEALTH_1>."
    out["generation"] = "Dear <DENY_1>, people in <DENY_2> with <HEALTH_1> should see a doctor."
    back = ppt("restore", "-q", stdin=json.dumps(out) + "\n")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["restored"] == "Dear Maria Lopez, people in Lyon with asthma should see a doctor."
