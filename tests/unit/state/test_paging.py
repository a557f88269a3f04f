"""The cursor of every paged list (state/paging.py): opaque, typed, and refused when it is not this list's."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID, uuid4

import pytest

from state.paging import (
    FIRST_DESC,
    MAX_PAGE,
    Int4,
    InvalidCursorError,
    decode_cursor,
    encode_cursor,
    fingerprint,
    page_of,
    page_size,
    start,
)

SHAPE = (datetime, UUID)


def test_a_cursor_gives_back_the_position_it_was_made_from() -> None:
    at, ident = datetime(2026, 12, 4, 21, 0, 0, 123456, tzinfo=UTC), uuid4()
    cursor = encode_cursor("sources", fingerprint("org"), (at, ident))
    assert "=" not in cursor and "+" not in cursor and "/" not in cursor, "base64url without padding"
    assert decode_cursor(cursor, "sources", fingerprint("org"), SHAPE) == (at, ident), "microseconds kept"


@pytest.mark.parametrize(
    "cursor",
    [
        "not base64 !",
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        base64.urlsafe_b64encode(b"{}").decode(),
        base64.urlsafe_b64encode(json.dumps(["sources", fingerprint("org"), "yesterday", "x"]).encode()).decode(),
        base64.urlsafe_b64encode(json.dumps(["sources", fingerprint("org"), 1, 2]).encode()).decode(),
        base64.urlsafe_b64encode(
            json.dumps(["sources", fingerprint("org"), "2026-12-04T21:00:00", str(uuid4())]).encode()
        ).decode(),
        "",
        "A" * 2000,
    ],
)
def test_a_malformed_cursor_is_invalid_cursor(cursor: str) -> None:
    with pytest.raises(InvalidCursorError) as caught:
        decode_cursor(cursor, "sources", fingerprint("org"), SHAPE)
    assert caught.value.code == "invalid_cursor"


def test_a_cursor_of_another_list_or_other_filters_is_refused() -> None:
    cursor = encode_cursor("sources", fingerprint("org-a", None), FIRST_DESC)
    with pytest.raises(InvalidCursorError, match="not one of the receipts list"):
        decode_cursor(cursor, "receipts", fingerprint("org-a", None), SHAPE)
    with pytest.raises(InvalidCursorError, match="another scope or other filters"):
        decode_cursor(cursor, "sources", fingerprint("org-b", None), SHAPE)
    with pytest.raises(InvalidCursorError, match="another scope or other filters"):
        decode_cursor(cursor, "sources", fingerprint("org-a", "failed"), SHAPE)


def test_the_first_page_starts_at_the_sentinel_and_the_last_has_no_cursor() -> None:
    assert start(None, "sources", "s", FIRST_DESC, SHAPE) == FIRST_DESC
    rows = [(3, "c"), (2, "b"), (1, "a")]
    more = page_of(rows, limit=2, total=3, listing="n", scope="s", position=lambda r: (r[0],))
    assert more.items == rows[:2] and more.total == 3 and more.next_cursor is not None
    assert decode_cursor(more.next_cursor, "n", "s", (int,)) == (2,), "the next page starts after the last row shown"
    last = page_of(rows[:2], limit=2, total=2, listing="n", scope="s", position=lambda r: (r[0],))
    assert last.next_cursor is None, "a page that fetched no extra row is the last"


def test_a_page_size_outside_one_to_max_is_refused() -> None:
    assert page_size(MAX_PAGE) == MAX_PAGE
    for bad in (0, MAX_PAGE + 1):
        with pytest.raises(ValueError, match="a page holds"):
            page_size(bad)


@pytest.mark.parametrize(
    ("position", "shape"),
    [
        (["0001-01-01T00:00:00+14:00", str(uuid4())], SHAPE),  # the year 0 in UTC
        (["9999-12-31T23:59:59.999999-00:01", str(uuid4())], SHAPE),  # the year 10000 in UTC
        (["2026-12-04T21:00:00+00:00", "not-a-uuid"], SHAPE),
        (["2026-12-04T21:00:00+00:00", "0123456789abcde\x00"], (datetime, str)),  # NUL: PostgreSQL text refuses it
        (["2026-12-04T21:00:00+00:00", "\ud800"], (datetime, str)),  # a lone surrogate is not UTF-8 text
        ([2**31], (Int4,)),
        ([-(2**31) - 1], (Int4,)),
        ([2**63], (int,)),
        ([True], (Int4,)),
        ([1.0], (int,)),
    ],
)
def test_a_position_no_row_could_hold_is_invalid_cursor(position: list[object], shape: tuple[type, ...]) -> None:
    cursor = base64.urlsafe_b64encode(json.dumps(["sources", fingerprint("org"), *position]).encode()).decode()
    with pytest.raises(InvalidCursorError):
        decode_cursor(cursor, "sources", fingerprint("org"), shape)


def test_a_position_is_read_back_in_utc_at_the_same_instant_and_int4_edges_pass() -> None:
    at = datetime(2026, 12, 4, 21, 0, tzinfo=timezone(timedelta(hours=14)))
    (back,) = decode_cursor(encode_cursor("x", fingerprint(), (at,)), "x", fingerprint(), (datetime,))
    assert back == at and back.utcoffset() == timedelta(0)
    for edge in (2**31 - 1, -(2**31)):
        assert decode_cursor(encode_cursor("x", fingerprint(), (edge,)), "x", fingerprint(), (Int4,)) == (edge,)
