"""Help marks a value's type and no type beside an on/off flag (issue 26: every flag showed a <bool> marker)."""

from __future__ import annotations

from tests.helpers import ppt


def test_flags_show_no_bool_marker_and_options_keep_their_type():
    r = ppt("attack", "ngram", "--help", env={"COLUMNS": "100"})
    assert r.returncode == 0
    assert "<bool>" not in r.stdout
    line = next(x for x in r.stdout.splitlines() if "--original-field" in x and "│" in x)
    assert "<str>" in line
