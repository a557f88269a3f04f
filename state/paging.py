"""Cursor paging: the one shape of every list the API, the CLI and the console read.

A list answers a `Page`: at most `limit` items in a stable order, `total` (how many rows match the list's
filters, all pages together) and `next_cursor` (None on the last page). A cursor is opaque to callers: the
base64url text (no padding) of a JSON array `[list, fingerprint, *position]`, where `list` names the list
(`sources`, `chunks`, ...), `fingerprint` is a short hash of the list's scope and filters, and the position
is the keyset of the last row shown (e.g. its `created_at` and `id`). The next page reads the rows after
that position through the list's index (keyset paging, never OFFSET), so a deep page costs what the first
does and a row inserted meanwhile neither shifts nor repeats a row. A cursor that does not decode, names
another list, or was made under another scope or other filters is `InvalidCursorError`
(`invalid_cursor`): a cursor never carries one organization's position into another's list. So is one
whose position decodes but could not be a row's: a timestamp without its offset or outside what
PostgreSQL and Python both hold once moved to UTC (`0001-01-01T00:00:00+14:00` is the year 0), an integer
outside its column's type (`int` is `bigint`, `Int4` is `integer`), text holding NUL or a lone surrogate
(PostgreSQL text refuses both), a malformed UUID, or a value of the wrong JSON type. The position is
checked here, once, for every list: a forged position never reaches a statement (where it would be a
driver error, a 5xx).

The paged reads, each answering a `Page` (names stable; the console, the API and the CLI call them):

- `state.organization_overview.page_organizations(db, name=, cursor=, limit=)`: organizations, oldest
  first, each with its sources by status, overdue sources, chunks, live memories, last ingestion.
- `state.api_keys.page_keys(db, organization_id=, include_revoked=, cursor=, limit=)`: keys, oldest first.
- `state.receipts.page_receipts(db, organization_id=, cursor=, limit=)`: receipts, newest first.
- `knowledge.ingestion.source_pages.page_sources(db, organization_id, status=, overdue=, title=, cursor=,
  limit=)`: a scope's sources, newest first; `page_chunks(db, source_id, organization_id=, operator=,
  model=, cursor=, limit=)`: a source's chunks in ordinal order; `source_progress(...)` (not a page): a
  source's stage and chunks done.
- `memory.pages.page_memories(db, organization_id=, user_id=, definition_id=, cursor=, limit=)`: live
  memories, newest first; `memory_chain(db, organization_id=, memory_id=)` (not a page): a chain's history.

The first page starts from a sentinel position beyond every row (`FIRST_DESC`, `FIRST_ASC`), so each list
is one statement whose keyset condition always applies (a generic plan keeps using the index).

Sorting and paging both ways (issue 47): a list that sorts names its sortable columns (`SortKey`, each
backed by an index), and `order_of` turns a caller's `sort` and `dir` into an `Order`, refusing a column
the list does not sort (`UnknownSortError`, `unknown_sort`). A cursor then carries its direction: a next
cursor reads the rows after its position, a previous cursor (`Page.prev_cursor`) the rows before it, both
through the same index (`keyset_sql` writes the comparison and the ORDER BY from the `SortKey`'s column,
never from request text). A list's default order keeps its old fingerprint, so cursors given out before
still read. This module must never read the database.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from uuid import UUID

from state.errors import StateError

__all__ = [
    "DEFAULT_PAGE",
    "FIRST_ASC",
    "FIRST_DESC",
    "MAX_PAGE",
    "Int4",
    "InvalidCursorError",
    "InvalidListFilterError",
    "Keyset",
    "Order",
    "Page",
    "SortKey",
    "UnknownSortError",
    "decode_cursor",
    "encode_cursor",
    "fingerprint",
    "keyset_sql",
    "order_of",
    "page_both",
    "page_of",
    "page_size",
    "read_cursor",
    "start",
]

T = TypeVar("T")

DEFAULT_PAGE = 100
"""The page size when a caller names none."""
MAX_PAGE = 1000
"""The largest page a caller may ask for."""

_MAX_UUID = UUID(int=(1 << 128) - 1)
_MIN_UUID = UUID(int=0)
_LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
FIRST_DESC: tuple[datetime, UUID] = (_LATEST, _MAX_UUID)
"""The position before the first row of a newest-first `(timestamp, uuid)` list."""
FIRST_ASC: tuple[datetime, UUID] = (_EARLIEST, _MIN_UUID)
"""The position before the first row of an oldest-first `(timestamp, uuid)` list."""
_MAX_CURSOR = 1000
_INT8 = (-(1 << 63), (1 << 63) - 1)
_INT4 = (-(1 << 31), (1 << 31) - 1)


class Int4(int):
    """The shape of a position held in an `integer` column (a plain `int` in a shape is a `bigint`)."""


class InvalidCursorError(StateError, ValueError):
    """The cursor is not one this list gave out (malformed, another list's, or made under other filters)."""

    code = "invalid_cursor"


class UnknownSortError(StateError, ValueError):
    """The list does not sort by that column (or the direction is not `asc` or `desc`)."""

    code = "unknown_sort"


class InvalidListFilterError(StateError, ValueError):
    """A list's filter is not one it reads (e.g. a subject that is not `kind:id`)."""

    code = "invalid_filter"


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list."""

    items: list[T]
    """The rows of this page, in the list's order."""
    total: int
    """How many rows match the list's scope and filters, over every page."""
    next_cursor: str | None
    """The cursor of the next page, or None when this page is the last."""
    prev_cursor: str | None = None
    """The cursor of the previous page, or None on the first page (lists that page both ways set it)."""


@dataclass(frozen=True, slots=True)
class SortKey:
    """A column a list sorts by: its SQL column (a name in code, never request text) and its cursor type."""

    column: str
    """The column (or expression) the list's index orders by."""
    kind: type
    """The type of its value in a cursor (`datetime`, `str`, `int`, `Int4`, `UUID`)."""
    descending: bool = False
    """Its direction when the caller names none."""


@dataclass(frozen=True, slots=True)
class Order:
    """A list's order: which column, which direction, and whether it is the list's default."""

    name: str
    """The column's name as callers send it (`?sort=`)."""
    key: SortKey
    """The column."""
    descending: bool
    """Newest, largest or last first."""
    default: bool
    """The list's default order (its cursors keep the fingerprint they had before sorting existed)."""

    @property
    def dir(self) -> str:
        """`asc` or `desc`."""
        return "desc" if self.descending else "asc"

    def scope(self, *parts: object) -> str:
        """The fingerprint of the list's filters under this order."""
        return fingerprint(*parts) if self.default else fingerprint(*parts, "sort", self.name, self.dir)


def order_of(sorts: dict[str, SortKey], sort: str | None, direction: str | None, default: str) -> Order:
    """The order a caller asks for; `UnknownSortError` for a column `sorts` does not hold or a bad direction."""
    name = sort or default
    if name not in sorts:
        raise UnknownSortError(
            f"this list sorts by {', '.join(sorted(sorts))}, not {name[:40]!r}: sort by one of those (a column header)"
        )
    if direction not in (None, "", "asc", "desc"):
        raise UnknownSortError("the sort direction is asc or desc: pick one, or leave it out for the usual one")
    key = sorts[name]
    descending = key.descending if not direction else direction == "desc"
    return Order(name, key, descending, name == default and descending == sorts[default].descending)


def keyset_sql(order: Order, *, backward: bool, value: int, tie: str = "id") -> tuple[str, str]:
    """The keyset comparison (`$value` the column, `$value+1` the tie) and the ORDER BY of a page.

    A backward page reads the rows before the position in the opposite order (the caller reverses them).
    """
    descending = order.descending != backward
    op = "<" if descending else ">"
    way = "DESC" if descending else "ASC"
    column = order.key.column
    return f"({column}, {tie}) {op} (${value}, ${value + 1})", f"{column} {way}, {tie} {way}"


Keyset = tuple[Any, ...]
"""A row's position in its list's order (the values of its ORDER BY, last one unique)."""


def fingerprint(*parts: object) -> str:
    """A short hash of a list's scope and filters, so a cursor answers only the list that made it."""
    text = json.dumps([None if p is None else str(p) for p in parts], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _plain(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    raise TypeError(f"a cursor holds text, integers, timestamps and UUIDs, not {type(value).__name__}")


def encode_cursor(listing: str, scope: str, position: Keyset) -> str:
    """The opaque cursor of `position` in list `listing` under `scope` (a `fingerprint`)."""
    raw = json.dumps([listing, scope, *(_plain(v) for v in position)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _timestamp(value: object) -> datetime:
    if not isinstance(value, str):
        raise ValueError("not a timestamp")
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError("a timestamp without its offset")
    try:
        return parsed.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+14:00: the year 0 in UTC, which no datetime holds
        raise ValueError("a timestamp out of range") from exc


def _uuid(value: object) -> UUID:
    if not isinstance(value, str):
        raise ValueError("not a UUID")
    return UUID(value)


def _integer(low: int, high: int) -> Callable[[object], int]:
    def read(value: object) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError("not an integer")
        if not low <= value <= high:
            raise ValueError("an integer out of its column's range")
        return int(value)

    return read


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("not text")
    if "\x00" in value:
        raise ValueError("text holding NUL, which PostgreSQL text refuses")
    value.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError (a ValueError): not UTF-8 text
    return value


_READERS: dict[type, Callable[[object], Any]] = {
    datetime: _timestamp,
    UUID: _uuid,
    int: _integer(*_INT8),
    Int4: _integer(*_INT4),
    str: _text,
}


def decode_cursor(cursor: str, listing: str, scope: str, shape: Sequence[type]) -> Keyset:
    """The position a cursor of `listing` under `scope` holds, typed and range-checked by `shape`.

    `InvalidCursorError` when the cursor is not this list's or its position could not be a row's.
    """
    if not cursor or len(cursor) > _MAX_CURSOR:
        raise InvalidCursorError("the cursor is empty or too long: pass the next_cursor a list answered")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw.decode())
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise InvalidCursorError("the cursor is malformed: pass the next_cursor a list answered") from exc
    if not isinstance(value, list) or len(value) != 2 + len(shape) or value[0] != listing:
        raise InvalidCursorError(f"the cursor is not one of the {listing} list")
    if value[1] != scope:
        raise InvalidCursorError(f"the cursor belongs to the {listing} list of another scope or other filters")
    try:
        return tuple(_READERS[kind](item) for kind, item in zip(shape, value[2:], strict=True))
    except (ValueError, TypeError) as exc:
        raise InvalidCursorError("the cursor is malformed: pass the next_cursor a list answered") from exc


_BACK = "<"


def read_cursor(cursor: str | None, listing: str, scope: str, shape: Sequence[type]) -> tuple[Keyset | None, bool]:
    """A cursor's position and whether it reads backward (a previous cursor); `(None, False)` for no cursor."""
    if cursor is None:
        return None, False
    try:
        return decode_cursor(cursor, _BACK + listing, scope, shape), True
    except InvalidCursorError:
        return decode_cursor(cursor, listing, scope, shape), False


def page_both(
    rows: Sequence[T],
    *,
    limit: int,
    total: int,
    listing: str,
    scope: str,
    position: Callable[[T], Keyset],
    cursor_given: bool,
    backward: bool,
) -> Page[T]:
    """A page from `limit + 1` rows read in the page's direction, with its next and previous cursors."""
    items = list(rows[:limit])
    more = len(rows) > limit
    if backward:
        items.reverse()
        before = more
        after = bool(items)
    else:
        before = cursor_given and bool(items)
        after = more and bool(items)
    return Page(
        items,
        total,
        encode_cursor(listing, scope, position(items[-1])) if after else None,
        encode_cursor(_BACK + listing, scope, position(items[0])) if before else None,
    )


def page_size(limit: int) -> int:
    """`limit` when it is 1..MAX_PAGE; ValueError otherwise (the API and the CLI refuse it before)."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"a page holds 1 to {MAX_PAGE} rows")
    return limit


def page_of(
    rows: Sequence[T], *, limit: int, total: int, listing: str, scope: str, position: Callable[[T], Keyset]
) -> Page[T]:
    """A page from `limit + 1` fetched rows: the extra row, when present, says a next page exists."""
    items = list(rows[:limit])
    more = len(rows) > limit and bool(items)
    return Page(items, total, encode_cursor(listing, scope, position(items[-1])) if more else None)


def start(cursor: str | None, listing: str, scope: str, first: Keyset, shape: Sequence[type]) -> Keyset:
    """Where a page starts: the cursor's position, or `first` for the first page."""
    return first if cursor is None else decode_cursor(cursor, listing, scope, shape)
