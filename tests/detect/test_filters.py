"""Time spans that name no moment of a person's life are dropped; dates of a life are kept."""

from __future__ import annotations

import pytest

from ppt.detect.base import Span
from ppt.detect.filters import drop_impersonal, impersonal


def _one(text: str, value: str, kind: str = "DATE") -> bool:
    start = text.index(value)
    return impersonal(text, Span(start, start + len(value), kind))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("We stay for a week in Lisbon.", "a week"),
        ("What are the opening hours?", "the opening hours"),
        ("Music of the 1990s was louder.", "the 1990s"),
        ("It takes 2 weeks to ship.", "2 weeks"),
        ("Summarise the news from today.", "today"),
    ],
)
def test_durations_relative_times_and_historical_years_are_dropped(text, value):
    assert _one(text, value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("I was born in 1984 in Lagos.", "1984"),
        ("The treaty of 1648 ended the war.", "1648"),  # a year may be a life's: kept
        ("My appointment is on March 3.", "March 3"),
        ("DOB 3/4/1987", "3/4/1987"),
        ("We moved in late October.", "late October"),
        ("Call me at 9:30.", "9:30"),
    ],
)
def test_dates_of_a_life_are_kept(text, value):
    assert not _one(text, value)


def test_only_time_kinds_are_filtered():
    text = "a week"
    assert drop_impersonal(text, [Span(0, 6, "PERSON"), Span(0, 6, "DATE")]) == [Span(0, 6, "PERSON")]
