"""Helpers shared by the sources over application state: named queries, value text, bounded text.

This module must never read the database itself and never write prose: it turns one stored value into
the text of one item field, and it loads the named statements the sources run.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from uuid import UUID

from context.tokens import estimate_tokens
from state.queries import Queries

__all__ = [
    "APP_QUERIES",
    "MAX_REF_ID_CHARS",
    "bounded_text",
    "item_tokens",
    "value_text",
]

APP_QUERIES = Queries(Path(__file__).resolve().with_name("app_queries.sql"))
"""The named statements of the application-state sources (`app_queries.sql`)."""

MAX_REF_ID_CHARS = 64
"""The bounded-text rule for a ref part in a body: longer text is cut to 63 characters and an ellipsis."""

_ELLIPSIS = "…"


def bounded_text(text: str, limit: int = MAX_REF_ID_CHARS) -> tuple[str, bool]:
    """`text` cut to `limit` characters (the last one an ellipsis) when longer; and whether it was cut."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if len(text) <= limit:
        return text, False
    return text[: limit - 1] + _ELLIPSIS, True


def value_text(value: object) -> str:
    """The text of one stored value: ISO dates, plain decimals, UUIDs and text as they are."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value == value.to_integral_value() else format(value, "f")
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def item_tokens(body: str) -> int:
    """The measured cost of an item body (0 for an empty body, so the packer estimates the line)."""
    return estimate_tokens(body) if body else 0
