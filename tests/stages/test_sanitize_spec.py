"""SanitizeSpec: one frozen object from the CLI edge to the stage, the stamper, workers and Ray (issue 23)."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from ppt.exec.recipes import SanitizeRecipe
from ppt.io import ExitCode, PptError
from ppt.stages.sanitize_spec import SanitizeSpec


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"keep_original": "text"}, "other than the text field"),
        ({"diagnostics": "ppt"}, "other than the text field"),
        ({"keep_original": "raw", "emit_alignment": "raw"}, "two different fields"),
        ({"stamp_mode": "verbose"}, "--stamp must be compact or full"),
        ({"min_kept": -1}, "--min-kept"),
    ],
)
def test_a_bad_spec_fails_when_made_with_a_usage_error(kw, msg):
    with pytest.raises(PptError) as e:
        SanitizeSpec("rantext", 6.0, **kw)
    assert e.value.exit_code == ExitCode.USAGE and msg in e.value.message


def test_spec_is_frozen_picklable_and_the_recipe_is_a_spec():
    spec = SanitizeRecipe(
        "custext+", 3.0, params={"k": 20}, policy={"oov": "drop"}, seed=5, keep_original="raw", diagnostics="d"
    )
    assert isinstance(spec, SanitizeSpec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.eps = 1.0  # type: ignore[misc]
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and again.private_fields == ["raw", "d"]
    assert "--param k=20" in spec.build_hint() and "--oov drop" in spec.build_hint()


def test_the_stage_and_its_stamper_read_the_one_spec(array_space):
    from ppt.io import Record
    from ppt.mechanisms import get_mechanism
    from ppt.stages.sanitize import SanitizeStage

    space = array_space("spec-words", ["river", "bank", "money", "stream", "water"], seed=1, dim=4)
    mech = get_mechanism("santext", 1.0, space=space, quiet=True)
    spec = SanitizeSpec("santext", 1.0, text_field="body", seed=9, keep_original="raw", stamp_mode="full")
    stage = SanitizeStage(mech, spec)
    [out] = stage([Record(line_no=1, id="a", data={"body": "river bank"}, text="river bank")])
    block = out["ppt"]["sanitize"]
    assert out["raw"] == "river bank" and block["text_field"] == "body" and block["keep_original"] == "raw"
    assert block["seeded"] is True and "params" in block  # seed and --stamp full reached the stamper
    assert stage.private_fields == ["raw"]
