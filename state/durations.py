"""The one duration format of the layer: an ISO 8601 duration of weeks, days, hours, minutes and seconds.

`P30D`, `PT12H`, `P1DT6H30M`, `P2W`: whole numbers only, at least one part, and no years or months (a
year or a month has no fixed length, so `P1M` would mean a different expiry in February than in March;
write `P30D` or `P365D`). A memory's `ttl` and the expiry settings are written in it, so what an operator
sets and what a model writes read the same way.

This module must never import another module of the project (settings use it), and never guess: a value
that is not exactly this format is refused with a message that says the format.
"""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["DURATION_FORMAT", "DURATION_PATTERN", "format_duration", "parse_duration"]

DURATION_PATTERN = (
    r"^P(?:(?P<weeks>\d{1,9})W|(?:(?P<days>\d{1,9})D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d{1,9})H)?(?:(?P<minutes>\d{1,9})M)?(?:(?P<seconds>\d{1,9})S)?)?)$"
)
"""The accepted text; a `T` must be followed by a part, and weeks stand alone (ISO 8601's `PnW`)."""
DURATION_FORMAT = "an ISO 8601 duration of whole weeks, days, hours, minutes or seconds, e.g. P30D, PT12H, P1DT6H"
"""How a refusal describes the format."""

_DURATION = re.compile(DURATION_PATTERN)
_CALENDAR = re.compile(r"P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:\d+W)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+S)?)?")
_SECONDS = {"weeks": 7 * 86_400, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
_LONGEST = timedelta.max.days * 86_400


def parse_duration(text: str) -> timedelta:
    """The duration `text` names; ValueError naming the format when it is not one (or does not fit)."""
    calendar = _CALENDAR.fullmatch(text)
    if calendar is not None and (calendar["years"] or calendar["months"]):
        raise ValueError(f"years and months have no fixed length; write days instead (P365D), {DURATION_FORMAT}")
    match = _DURATION.fullmatch(text)
    if match is None or text in {"P", "PT"}:
        raise ValueError(f"{text!r} is not {DURATION_FORMAT}")
    seconds = sum(int(value) * _SECONDS[part] for part, value in match.groupdict().items() if value is not None)
    if seconds > _LONGEST:
        raise ValueError(f"{text!r} is longer than any date can be")
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The duration as this format writes it (`P30D`, `PT1H30M`, `PT0S`); the inverse of `parse_duration`."""
    seconds = int(value.total_seconds())
    if seconds < 0:
        raise ValueError("a duration is never negative")
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    clock = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M"), (secs, "S")) if n)
    out = "P" + (f"{days}D" if days else "") + (f"T{clock}" if clock else "")
    return out if out != "P" else "PT0S"
