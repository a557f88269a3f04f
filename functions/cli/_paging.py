"""How every `ac-context … list` pages: `--limit N` (the page) or `--all`, and one line when it stops early.

A list counts what it would show without a page (a count query beside each list query), shows at most its
page, and when the page holds fewer than all it says so in one line: `showing 100 of 146 sources; --all or
--limit N for more` (on stderr under `--json`, so the JSON stays the rows alone). This module must never
read the database: the commands pass it their counts.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from functions.cli._common import console, plain

__all__ = ["MAX_LIMIT", "AllFlag", "limit_option", "page_limit", "print_page_note"]

MAX_LIMIT = 1000
"""The largest `--limit`; `--all` lists more."""

AllFlag = Annotated[bool, typer.Option("--all", help="List every row, however many (no page).")]


def limit_option(default: int, what: str) -> Any:
    """The `--limit N` option of a list: at most N rows (1..MAX_LIMIT), `default` unless given."""
    return typer.Option("--limit", min=1, max=MAX_LIMIT, help=f"At most this many {what}.")


def page_limit(limit: int, total: int, *, everything: bool) -> int:
    """The rows to fetch: `limit`, or all `total` of them with `--all` (at least 1, for a LIMIT clause)."""
    return max(total, 1) if everything else limit


def print_page_note(shown: int, total: int, noun: str, *, as_json: bool = False) -> None:
    """Say `showing N of M <noun>; --all or --limit N for more` when the page stops before the end."""
    if shown >= total:
        return
    line = f"showing {shown} of {total} {noun}; --all or --limit N for more"
    (Console(stderr=True) if as_json else console).print(plain(line), soft_wrap=True)
