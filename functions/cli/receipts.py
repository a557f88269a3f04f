"""`ac-context receipts show ID | list [--org ORG] [--limit N] [--cursor C]`: the receipts deletions and erasures left.

A receipt says what was asked, by whom, when, and what left the layer (counts per table or store, object keys
without file names); it holds no content, so printing one prints none. An unknown id is one line,
`receipt_not_found`. This module must never change a receipt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

import typer

from functions.cli._common import JsonFlag, OrgOption, console, open_cli_database, print_json, run, safe
from functions.cli._paging import MAX_LIMIT, AllFlag, CursorOption, limit_option, print_page_note, read_pages
from functions.cli._service import ask_pages
from functions.cli.erase import show_receipt

if TYPE_CHECKING:
    from state.receipts import Receipt

__all__ = ["receipts_app"]

receipts_app = typer.Typer(help="Show the receipts of deletions and erasures.", no_args_is_help=True)


@receipts_app.command("show")
def show(
    receipt_id: Annotated[UUID, typer.Argument(help="The receipt id.")],
    as_json: JsonFlag = False,
) -> None:
    """One receipt: what was asked, by whom, when, and what was removed."""
    from state.receipts import get_receipt

    async def main() -> Receipt:
        async with open_cli_database() as db:
            return await get_receipt(db, receipt_id)

    receipt = run(main)
    if as_json:
        print_json(receipt.as_json())
        return
    show_receipt(receipt)


@receipts_app.command("list")
def list_cmd(
    org: OrgOption = None,
    limit: Annotated[int, limit_option(100, "receipts, newest first")] = 100,
    cursor: CursorOption = None,
    everything: AllFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """The receipts (of --org, or all), newest first (a page with more after it names its cursor)."""
    answered = ask_pages(
        "/v1/receipts", {"organization_id": org}, cursor=cursor, limit=limit, everything=everything,
        max_limit=MAX_LIMIT,
    )  # fmt: skip
    rows, total, next_cursor = answered if answered is not None else _receipts_here(org, cursor, limit, everything)
    if as_json:
        print_json(rows)
        print_page_note(len(rows), total, "receipts", next_cursor, as_json=True)
        return
    if not rows:
        console.print("no receipts" + (f" for organization {org}" if org else ""))
        return
    for row in rows:
        removed = ", ".join(f"{k}: {v}" for k, v in row["counts"].items()) or "nothing"
        subject = f" subject {row['subject']}" if row["subject"] else ""
        console.print(
            f"{row['id']} {row['kind']} {row['status']} target {row['target_id']}{safe(subject)}"
            f" removed {safe(removed)} started {row['started_at']}",
            soft_wrap=True,
        )
    print_page_note(len(rows), total, "receipts", next_cursor)


def _receipts_here(
    org: UUID | None, cursor: str | None, limit: int, everything: bool
) -> tuple[list[dict[str, Any]], int, str | None]:
    """The page (or pages) of receipts read in this process."""
    from functions.actions.receipts import receipts_page
    from functions.actions.scope import CLI

    async def main() -> tuple[list[dict[str, Any]], int, str | None]:
        async with open_cli_database() as db:
            page = await read_pages(
                lambda c, n: receipts_page(db, CLI, organization_id=org, cursor=c, limit=n),
                cursor=cursor, limit=limit, everything=everything,
            )  # fmt: skip
        return [r.as_json() for r in page.items], page.total, page.next_cursor

    return run(main)
