"""`ac-context org create|list`: organizations for a standalone deployment.

The platform owns `public.organizations`; these commands make the tenant every `--org` option names when
the layer runs on its own. They open the database alone (`open_cli_database`): no embedder is loaded.
This module must never delete or rename an organization.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from functions.cli._common import JsonFlag, console, open_cli_database, print_json, run, safe
from functions.cli._paging import AllFlag, limit_option, page_limit, print_page_note

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
    as_json: JsonFlag = False,
) -> None:
    """Create an organization and print its id."""
    from state.organizations import create_organization

    async def main() -> dict[str, Any]:
        async with open_cli_database() as db:
            org = await create_organization(db, name)
        return {"id": str(org.id), "name": org.name, "created_at": org.created_at.isoformat()}

    row = run(main)
    if as_json:
        print_json(row)
        return
    console.print(f"created organization [bold]{safe(row['name'])}[/]: {row['id']}")
    console.print(f"[dim]use it with --org {row['id']}[/]")


@org_app.command("list")
def list_all(
    limit: Annotated[int, limit_option(100, "organizations, oldest first")] = 100,
    everything: AllFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """The organizations, oldest first (a page that stops early says `N of M`)."""
    from state.organizations import count_organizations, list_organizations

    async def main() -> tuple[list[dict[str, Any]], int]:
        async with open_cli_database() as db:
            total = await count_organizations(db)
            orgs = await list_organizations(db, limit=page_limit(limit, total, everything=everything))
        return [{"id": str(o.id), "name": o.name, "created_at": o.created_at.isoformat()} for o in orgs], total

    rows, total = run(main)
    if as_json:
        print_json(rows)
        print_page_note(len(rows), total, "organizations", as_json=True)
        return
    if not rows:
        console.print("no organizations yet; create one with `ac-context org create NAME`", markup=False)
    for row in rows:
        console.print(f"{row['id']}  [bold]{safe(row['name'])}[/]  [dim]{row['created_at']}[/]")
    print_page_note(len(rows), total, "organizations")
