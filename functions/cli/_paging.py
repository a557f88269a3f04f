"""How every `ac-context … list` pages: `--limit N`, `--cursor C` (the page after another), or `--all`.

A list reads one page of the core's paged read (`state.paging.Page`: its rows, the `total` its filters
match, and the cursor of the next page), shows it, and when more rows follow it says so in one line that
names the next page: `showing 100 of 146 sources; next page: --cursor <c> (or --all)` (on stderr under
`--json`, so the JSON stays the rows alone). `--all` walks every page, `MAX_LIMIT` rows at a time. A cursor
the list did not give out is one line, `error: invalid_cursor: …`. This module must never read the
database itself: the commands pass it the function that reads one page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from functions.cli._common import console, plain

if TYPE_CHECKING:
    from state.paging import Page

__all__ = ["MAX_LIMIT", "AllFlag", "CursorOption", "limit_option", "print_page_note", "read_pages"]

T = TypeVar("T")

MAX_LIMIT = 1000
"""The largest `--limit`; `--all` lists more."""

AllFlag = Annotated[bool, typer.Option("--all", help="List every row, however many (every page).")]
CursorOption = Annotated[
    str | None, typer.Option("--cursor", help="Show the page after this one: the cursor a page printed.")
]


def limit_option(default: int, what: str) -> Any:
    """The `--limit N` option of a list: at most N rows (1..MAX_LIMIT), `default` unless given."""
    return typer.Option("--limit", min=1, max=MAX_LIMIT, help=f"At most this many {what}.")


async def read_pages(
    fetch: Callable[[str | None, int], Awaitable[Page[T]]], *, cursor: str | None, limit: int, everything: bool
) -> Page[T]:
    """One page (`fetch(cursor, limit)`), or with `everything` every page from `cursor` on, as one page."""
    page = await fetch(cursor, MAX_LIMIT if everything else limit)
    if not everything:
        return page
    items = list(page.items)
    while page.next_cursor is not None:
        page = await fetch(page.next_cursor, MAX_LIMIT)
        items.extend(page.items)
    return type(page)(items, page.total, None)


def print_page_note(shown: int, total: int, noun: str, next_cursor: str | None, *, as_json: bool = False) -> None:
    """Say `showing N of M <noun>; next page: --cursor C (or --all)` when a next page follows."""
    if next_cursor is None:
        return
    line = f"showing {shown} of {total} {noun}; next page: --cursor {next_cursor} (or --all)"
    (Console(stderr=True) if as_json else console).print(plain(line), soft_wrap=True)
