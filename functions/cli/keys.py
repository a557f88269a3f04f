"""`ac-context keys mint|list|revoke`: the API keys of `/v1/`, from the machine that holds the database.

`mint --org ORG` binds a key to one organization, `mint --operator` makes an operator key; the secret is
printed once and stored only as a hash. `list` shows ids, scopes and revocations, never a secret; `revoke
ID` refuses the key from its next request on. This module must never print a secret except in the one
answer that mints it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from functions.cli._common import JsonFlag, OrgOption, console, open_cli_database, print_json, run, safe
from functions.cli._paging import AllFlag, CursorOption, limit_option, print_page_note, read_pages

if TYPE_CHECKING:
    from state.api_keys import ApiKey

__all__ = ["keys_app"]

keys_app = typer.Typer(help="Mint, list and revoke the API keys of /v1/.", no_args_is_help=True)


def _json(key: ApiKey) -> dict[str, Any]:
    from functions._wire import key_json  # only here: --help must not load pydantic or the core

    return key_json(key)


def _name(value: str) -> str:
    from state.api_keys import MAX_KEY_NAME

    if len(value.strip()) > MAX_KEY_NAME or "\x00" in value:
        raise typer.BadParameter(f"a key name has at most {MAX_KEY_NAME} characters")
    return value.strip()


@keys_app.command("mint")
def mint(
    org: OrgOption = None,
    operator: Annotated[bool, typer.Option("--operator", help="An operator key instead of an organization's.")] = False,
    name: Annotated[str, typer.Option("--name", help="Who holds the key.", callback=_name)] = "",
    as_json: JsonFlag = False,
) -> None:
    """Mint a key bound to --org, or an operator key with --operator; print its secret once."""
    if (org is None) == (not operator):
        raise typer.BadParameter("give exactly one of --org ORG or --operator", param_hint="--org / --operator")
    from functions.actions import keys
    from functions.actions.scope import CLI

    async def main() -> dict[str, Any]:
        async with open_cli_database() as db:
            minted = await keys.mint(db, CLI, organization_id=org, name=name)
        return {**_json(minted.key), "secret": minted.secret}

    row = run(main)
    if as_json:
        print_json(row)
        return
    scope = "operator" if row["organization_id"] is None else f"organization {row['organization_id']}"
    console.print(f"minted key [bold]{row['id']}[/] ({scope})")
    typer.echo(row["secret"])
    console.print("[dim]this is the only time the secret is shown; send it as 'Authorization: Bearer <key>'[/]")


@keys_app.command("list")
def list_all(
    org: OrgOption = None,
    active: Annotated[bool, typer.Option("--active", help="Leave revoked keys out.")] = False,
    limit: Annotated[int, limit_option(100, "keys, oldest first")] = 100,
    cursor: CursorOption = None,
    everything: AllFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """The keys (of --org, or all), oldest first; never a secret (a page with more after it names its cursor)."""
    from functions.actions import keys
    from functions.actions.scope import CLI

    async def main() -> tuple[list[dict[str, Any]], int, str | None]:
        async with open_cli_database() as db:
            page = await read_pages(
                lambda c, n: keys.keys_page(
                    db, CLI, organization_id=org, include_revoked=not active, cursor=c, limit=n
                ),
                cursor=cursor, limit=limit, everything=everything,
            )  # fmt: skip
        return [_json(k) for k in page.items], page.total, page.next_cursor

    rows, total, next_cursor = run(main)
    if as_json:
        print_json(rows)
        print_page_note(len(rows), total, "keys", next_cursor, as_json=True)
        return
    if not rows:
        console.print("no API keys; mint one with `ac-context keys mint --org ORG` (or --operator)", markup=False)
    for row in rows:
        scope = "operator" if row["organization_id"] is None else row["organization_id"]
        state = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
        console.print(f"{row['id']}  {scope}  [bold]{safe(row['name'])}[/]  [dim]{row['created_at']}  {state}[/]")
    print_page_note(len(rows), total, "keys", next_cursor)


@keys_app.command("revoke")
def revoke(
    key_id: Annotated[str, typer.Argument(metavar="ID", help="The key id (as `keys list` shows it).")],
    as_json: JsonFlag = False,
) -> None:
    """Revoke a key: it is refused from its next request on."""
    from functions.actions import keys
    from functions.actions.scope import CLI

    async def main() -> dict[str, Any]:
        async with open_cli_database() as db:
            return _json(await keys.revoke(db, CLI, key_id.strip()))

    row = run(main)
    if as_json:
        print_json(row)
        return
    console.print(f"revoked key [bold]{row['id']}[/] at {row['revoked_at']}")
