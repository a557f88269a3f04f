"""`state.durations`, the one duration format (issue 22): ISO 8601 weeks, days, hours, minutes and seconds,
whole numbers only; years and months are refused because they have no fixed length."""

from __future__ import annotations

from datetime import timedelta

import pytest

from state.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("P30D", timedelta(days=30)),
        ("PT12H", timedelta(hours=12)),
        ("PT90M", timedelta(minutes=90)),
        ("PT45S", timedelta(seconds=45)),
        ("P1DT6H30M", timedelta(days=1, hours=6, minutes=30)),
        ("P2W", timedelta(days=14)),
        ("PT0S", timedelta(0)),
    ],
)
def test_a_duration_reads_as_its_length(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected
    assert parse_duration(format_duration(expected)) == expected


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("P1Y", "no fixed length"),
        ("P1M", "no fixed length"),
        ("P1Y2M3D", "no fixed length"),
        ("P", "is not an ISO 8601 duration"),
        ("PT", "is not an ISO 8601 duration"),
        ("P1DT", "is not an ISO 8601 duration"),
        ("P2W1D", "is not an ISO 8601 duration"),
        ("P1.5D", "is not an ISO 8601 duration"),
        ("-P1D", "is not an ISO 8601 duration"),
        ("p30d", "is not an ISO 8601 duration"),
        ("30", "is not an ISO 8601 duration"),
        (" P1D", "is not an ISO 8601 duration"),
        ("P1D\n", "is not an ISO 8601 duration"),
        ("P999999999W", "longer than any date"),
    ],
)
def test_anything_else_is_refused_with_the_format_named(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_duration(text)
