"""`ac-context org create|list`: organizations for a standalone deployment.

The platform owns `public.organizations`; these commands make the tenant every `--org` option names when
the layer runs on its own. They open the database alone (`open_cli_database`): no embedder is loaded.
This module must never delete or rename an organization.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from functions.cli._common import JsonFlag, console, open_cli_database, print_json, run, safe
from functions.cli._paging import MAX_LIMIT, AllFlag, CursorOption, limit_option, print_page_note, read_pages
from functions.cli._service import ask_pages

__all__ = ["org_app"]

org_app = typer.Typer(help="Create and list organizations (for running the layer on its own).", no_args_is_help=True)


def _name(value: str) -> str:
    from state.organizations import MAX_ORGANIZATION_NAME

    if not value.strip() or len(value.strip()) > MAX_ORGANIZATION_NAME:
        raise typer.BadParameter(f"an organization name has 1 to {MAX_ORGANIZATION_NAME} characters")
    return value.strip()


@org_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="Its display name.", callback=_name)],
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print the id alone (for a shell variable).")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Create an organization and print its id."""
    from functions.actions import orgs
    from functions.actions.scope import CLI

    async def main() -> dict[str, Any]:
        async with open_cli_database() as db:
            org = await orgs.create(db, CLI, name)
        return {"id": str(org.id), "name": org.name, "created_at": org.created_at.isoformat()}

    row = run(main)
    if as_json or quiet:
        print_json(row) if as_json else typer.echo(row["id"])
        return
    console.print(f"created organization [bold]{safe(row['name'])}[/]: {row['id']}")
    console.print(f"[dim]use it with --org {row['id']}[/]")


@org_app.command("list")
def list_all(
    name: Annotated[str | None, typer.Option("--name", help="Only those whose name contains this text.")] = None,
    limit: Annotated[int, limit_option(100, "organizations, oldest first")] = 100,
    cursor: CursorOption = None,
    everything: AllFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """The organizations, oldest first, with their sources, chunks and memories (a page names the next)."""
    answered = ask_pages(
        "/v1/organizations", {"name": name}, cursor=cursor, limit=limit, everything=everything, max_limit=MAX_LIMIT
    )
    rows, total, next_cursor = answered if answered is not None else _list_here(name, cursor, limit, everything)
    if as_json:
        print_json(rows)
        print_page_note(len(rows), total, "organizations", next_cursor, as_json=True)
        return
    if not rows:
        console.print(
            "no organizations" + (" with that name" if name else " yet; create one with `ac-context org create NAME`"),
            markup=False,
        )
    for row in rows:
        sources = ", ".join(f"{n} {status}" for status, n in sorted(row["sources_by_status"].items())) or "no sources"
        overdue = f", {row['overdue_sources']} overdue" if row["overdue_sources"] else ""
        console.print(f"{row['id']}  [bold]{safe(row['name'])}[/]  [dim]{row['created_at']}[/]")
        console.print(
            f"    {safe(sources)}{overdue}; {row['chunks']} chunks; {row['memories']} memories; "
            f"last ingestion {row['last_ingested_at'] or 'never'}",
            soft_wrap=True,
        )
    print_page_note(len(rows), total, "organizations", next_cursor)


def _list_here(
    name: str | None, cursor: str | None, limit: int, everything: bool
) -> tuple[list[dict[str, Any]], int, str | None]:
    """The page (or pages) of organizations read in this process."""
    from functions.actions import orgs
    from functions.actions.scope import CLI

    async def main() -> tuple[list[dict[str, Any]], int, str | None]:
        async with open_cli_database() as db:
            page = await read_pages(
                lambda c, n: orgs.organizations_page(db, CLI, name=name, cursor=c, limit=n),
                cursor=cursor, limit=limit, everything=everything,
            )  # fmt: skip
        return [o.as_json() for o in page.items], page.total, page.next_cursor

    return run(main)
