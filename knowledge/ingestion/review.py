"""A document's owner and review date: the one reading of both fields for every way a document arrives.

An upload, a synced URI, a batch entry and the CLI hand their text to `parse_review_by` and `clean_owner`,
and the registration functions check what they are given with `checked_review`, so each path refuses the
same input with the same error (`ReviewFieldInvalidError`, code `review_field_invalid`, naming the
field's path). A review date is an ISO calendar date written `YYYY-MM-DD`, nothing else (no time, no
week date, no ordinal); an owner is one line of text, trimmed, never blank, at most `MAX_OWNER_CHARS`
characters. A source is overdue when its review date is before today in UTC: the database computes that
(migrations/0087), never this module, so every reader agrees on one clock. This module must never read
the database nor echo the refused value in a message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Final

from knowledge.errors import ReviewFieldInvalidError

__all__ = ["MAX_OWNER_CHARS", "Review", "checked_review", "clean_owner", "parse_review_by"]

MAX_OWNER_CHARS: Final = 200
"""The longest owner a source may name (the database's CHECK says the same)."""

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass(frozen=True, slots=True)
class Review:
    """Who answers for a document and when it must be reviewed again; None means none."""

    owner: str | None = None
    """The owner, trimmed, or None."""
    review_by: date | None = None
    """The review date, or None."""


def parse_review_by(value: str | None, *, loc: tuple[str | int, ...] = ("review_by",)) -> date | None:
    """The date of `YYYY-MM-DD` text (None: none); `ReviewFieldInvalidError` at `loc` for anything else."""
    if value is None:
        return None
    text = value.strip()
    if _ISO_DATE.fullmatch(text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            pass
    raise ReviewFieldInvalidError(loc, "is not a date; write it YYYY-MM-DD, e.g. 2026-03-31")


def clean_owner(value: str | None, *, loc: tuple[str | int, ...] = ("owner",)) -> str | None:
    """The trimmed owner (None: none); `ReviewFieldInvalidError` at `loc` when blank, too long or multi-line."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        raise ReviewFieldInvalidError(loc, "is blank; omit it for no owner")
    if len(text) > MAX_OWNER_CHARS:
        raise ReviewFieldInvalidError(loc, f"is longer than {MAX_OWNER_CHARS} characters")
    if _CONTROL.search(text):
        raise ReviewFieldInvalidError(loc, "must be one line of text, without control characters")
    return text


def checked_review(owner: str | None, review_by: date | None, *, loc: tuple[str | int, ...] = ()) -> Review:
    """The review fields a registration stores, checked again whoever parsed them (`loc` prefixes the paths)."""
    if review_by is not None and (not isinstance(review_by, date) or isinstance(review_by, datetime)):
        raise ReviewFieldInvalidError((*loc, "review_by"), "is not a date; write it YYYY-MM-DD, e.g. 2026-03-31")
    return Review(owner=clean_owner(owner, loc=(*loc, "owner")), review_by=review_by)
