"""What every paged `/v1/` list shares: the `cursor` and `limit` parameters and the page's envelope.

A list answers `items` (at most `limit` rows), `total` (every row its filters match, over all pages) and
`next_cursor` (pass it back as `cursor` for the next page; null on the last). The cursor is opaque
(`state.paging`): one made by another list, another scope or other filters answers 422 `invalid_cursor`.
A list that answered its rows under another key before (`sources`, `keys`, `organizations`, `receipts`)
answers them under that key too, so a caller that sends only `limit` reads the same first page as before.
This module must never read the database.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar
from uuid import UUID

from fastapi import Query
from pydantic import BaseModel, ConfigDict

from functions.errors import ApiError
from state.paging import MAX_PAGE, Page

__all__ = [
    "CURSOR_ERRORS",
    "SORT_ERRORS",
    "CursorQuery",
    "DirQuery",
    "PageOut",
    "limit_query",
    "page_body",
    "scope_of",
    "sort_query",
]

T = TypeVar("T")

CursorQuery = Annotated[
    str | None,
    Query(
        max_length=1000,
        description="The `next_cursor` (or `prev_cursor`) of a page the list answered; omit it for the first page.",
    ),
]
"""The `cursor` parameter of a paged list."""

CURSOR_ERRORS = "`invalid_cursor`: the cursor is malformed, or another list's, scope's or filters'."

SORT_ERRORS = "`unknown_sort`: the list does not sort by that column, or `dir` is not asc or desc."
"""What a sortable list's 422 adds."""


def sort_query(columns: list[str], default: str) -> Any:
    """The `sort` parameter of a list that sorts by `columns` (server-side, each through an index)."""
    return Query(max_length=40, description=f"The column to sort by: {', '.join(columns)} (default {default}).")


DirQuery = Annotated[
    str | None, Query(max_length=10, description="`asc` or `desc`; omit it for the column's usual direction.")
]
"""The `dir` parameter of a sortable list."""
"""What a paged list's 422 adds to `invalid_request`."""


def limit_query(what: str) -> Any:
    """The `limit` parameter of a paged list: 1..MAX_PAGE rows of `what`."""
    return Query(ge=1, le=MAX_PAGE, description=f"The most {what} a page holds (1 to {MAX_PAGE}).")


class PageOut(BaseModel):
    """Where a page sits in its list."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    total: int
    """How many rows the list's scope and filters match, over every page."""
    next_cursor: str | None
    """Pass it as `cursor` for the next page; null on the last page."""
    prev_cursor: str | None = None
    """Pass it as `cursor` for the previous page; null on the first page (lists that page both ways)."""


def page_body(page: Page[T], rows: list[Any], *, legacy: str | None = None) -> dict[str, Any]:
    """A page as the API answers it: `items`, `total`, `next_cursor` (and the rows under `legacy` too)."""
    body: dict[str, Any] = {
        "items": rows, "total": page.total, "next_cursor": page.next_cursor, "prev_cursor": page.prev_cursor,
    }  # fmt: skip
    if legacy is not None:
        body[legacy] = rows
    return body


def scope_of(organization_id: UUID | None, platform: bool) -> UUID | None:
    """The scope a knowledge route names: an organization, or the platform (None); one of them, not both."""
    if platform and organization_id is not None:
        raise ApiError(422, "scope_ambiguous", "send organization_id or platform=true, not both")
    if not platform and organization_id is None:
        raise ApiError(422, "scope_required", "send organization_id, or platform=true for a platform document")
    return organization_id
