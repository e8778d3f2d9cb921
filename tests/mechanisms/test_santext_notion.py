"""SanText+'s notion states its worst case with the cross-class term, as its stamp and the audit do (issue 37,
item 4); SanText's is unchanged."""

from __future__ import annotations

import json

from ppt.mechanisms.santext import SanText, SanTextPlus
from tests.helpers import ppt


def test_santext_plus_notion_names_the_cross_class_term():
    assert "eps * D + ln(1/p)" in SanTextPlus.notion and SanTextPlus.notion.startswith("metric LDP")
    assert "worst case eps * D over the vocabulary" in SanText.notion
    rows = [json.loads(line) for line in ppt("mechs", "--json").stdout.splitlines()]
    [plus] = [r for r in rows if r["name"] == "santext+"]
    assert "ln(1/p)" in plus["notion"]
