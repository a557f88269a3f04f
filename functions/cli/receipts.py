"""`ac-context receipts show ID | list [--org ORG] [--limit N]`: the receipts deletions and erasures left.

A receipt says what was asked, by whom, when, and what left the layer (counts per table or store, object keys
without file names); it holds no content, so printing one prints none. An unknown id is one line,
`receipt_not_found`. This module must never change a receipt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

import typer

from functions.cli._common import JsonFlag, OrgOption, console, open_cli_database, print_json, run, safe
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
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most this many, newest first.")] = 100,
    as_json: JsonFlag = False,
) -> None:
    """The receipts (of --org, or all), newest first."""
    from state.receipts import list_receipts

    async def main() -> list[dict[str, Any]]:
        async with open_cli_database() as db:
            return [r.as_json() for r in await list_receipts(db, organization_id=org, limit=limit)]

    rows = run(main)
    if as_json:
        print_json(rows)
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
