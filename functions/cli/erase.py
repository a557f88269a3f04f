"""`ac-context erase user|organization … --yes`: erase a person, or an organization, from this layer.

`erase organization ORG --yes` erases everything the layer holds for the organization in bounded batches
(`functions.organization_erasure`); killed at any point, the same command finishes it and the receipt counts the resume.

An erasure cannot be undone, so every `erase` command refuses to run without `--yes` (one line,
`confirmation_required`, nothing read or changed). `erase user` removes every revision of every user-scope
memory of the user, and with `--subject` the organization memories about that person, through
`memory.erasure.erase_user`, and prints the receipt (`--json`: the receipt's JSON). The `erase` group is a typer
sub-app: another erasure (`erase organization`) is one more `@erase_app.command` here, using `confirm` and
`show_receipt`. This module must never delete anything itself: it calls the core's erasure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

import typer

from functions.cli._common import JsonFlag, OrgRequired, console, open_cli_database, print_json, run, safe
from functions.cli.errors import CliError

if TYPE_CHECKING:
    from functions.actions.scope import Caller
    from state.receipts import Receipt

__all__ = ["YesFlag", "cli_caller", "cli_requester", "confirm", "erase_app", "show_receipt"]

erase_app = typer.Typer(help="Erase data from this layer (irreversible; leaves a receipt).", no_args_is_help=True)

YesFlag = Annotated[bool, typer.Option("--yes", help="Confirm the erasure: it cannot be undone.")]
BatchOption = Annotated[int, typer.Option("--batch-size", min=1, max=100_000, help="Memory chains per transaction.")]


def _canonical_id(value: str) -> UUID:
    """A UUID argument: canonical text only, else a usage error naming the rule (never the value)."""
    from state.ids import UUID_RULE, parse_canonical_uuid

    try:
        return parse_canonical_uuid(value)
    except ValueError:
        raise typer.BadParameter(f"not a valid UUID: it must be {UUID_RULE}") from None


def confirm(yes: bool, what: str) -> None:
    """Refuse with one line `confirmation_required` unless `--yes` was given."""
    if not yes:
        raise CliError(
            "confirmation_required",
            f"erasing {what} cannot be undone, so it needs --yes",
            hint="add --yes to go ahead",
        )


def cli_requester() -> str:
    """Who asks, as a receipt records it for the command line: `cli:<login name>`."""
    import getpass

    try:
        name = getpass.getuser()
    except (OSError, KeyError):  # no login name in this environment
        name = ""
    return f"cli:{name.strip()[:100]}" if name.strip() else "cli"


def cli_caller() -> Caller:
    """The command line as the acts see it: an operator whose receipts name `cli:<login name>`."""
    from functions.actions.scope import Caller

    return Caller(organization_id=None, name=cli_requester())


def show_receipt(receipt: Receipt) -> None:
    """Print one receipt for people (what was asked, what left, when)."""
    data: dict[str, Any] = receipt.as_json()
    console.print(f"receipt [bold]{data['id']}[/] ({data['kind']}, {data['status']})")
    console.print(f"  target {data['target_id']} in organization {safe(data['organization_id'] or 'platform')}")
    if data["subject"]:
        console.print(f"  subject {safe(data['subject'])}")
    console.print(f"  requested by {safe(data['requested_by'])}, resumed {data['resumed']} time(s)")
    console.print(f"  started {data['started_at']}, finished {data['finished_at'] or '-'}")
    counts = ", ".join(f"{safe(k)}: {v}" for k, v in data["counts"].items()) or "nothing"
    console.print(f"  removed {counts}")
    for key in data["object_keys"]:
        console.print(f"  object {safe(key)}")


@erase_app.command("user")
def erase_user_cmd(
    user_id: Annotated[UUID, typer.Argument(help="The user (a lower-case hyphenated UUID).", parser=_canonical_id)],
    org: OrgRequired,
    subject: Annotated[
        str | None,
        typer.Option("--subject", help="Also the organization memories about this person: crm.person:ID."),
    ] = None,
    yes: YesFlag = False,
    batch_size: BatchOption = 1000,
    as_json: JsonFlag = False,
) -> None:
    """Erase every revision of a user's memories (and, with --subject, the organization memories about them)."""
    confirm(yes, f"user {user_id}")
    from functions.actions.erasure import erase_person

    async def main() -> Receipt:
        async with open_cli_database() as db:
            return await erase_person(db, cli_caller(), org, user_id, subject=subject, batch_size=batch_size)

    receipt = run(main)
    if as_json:
        print_json(receipt.as_json())
        return
    show_receipt(receipt)


@erase_app.command("organization")
def erase_organization_cmd(
    organization_id: Annotated[
        UUID, typer.Argument(help="The organization (a lower-case hyphenated UUID).", parser=_canonical_id)
    ],
    yes: YesFlag = False,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, max=100_000, help="Rows per transaction.")] = 2000,
    as_json: JsonFlag = False,
) -> None:
    """Erase everything this layer holds for an organization; rerun it to finish an interrupted erasure."""
    confirm(yes, f"organization {organization_id}")
    from functions._services import default_object_store
    from functions.actions.erasure import erase_organization
    from state.settings import get_settings

    async def main() -> Receipt:
        async with open_cli_database() as db:
            store = default_object_store(get_settings())
            return await erase_organization(db, store, cli_caller(), organization_id, batch_size=batch_size)

    receipt = run(main)
    if as_json:
        print_json(receipt.as_json())
        return
    show_receipt(receipt)
