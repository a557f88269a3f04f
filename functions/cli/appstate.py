"""`ac-context user|agent|run`: the members, agent definitions and runs a memory write names.

A new organization adds a member (`user add EMAIL`), an agent (`agent add NAME`) and a run of that agent for
the member (`run start --agent --user`, printing the run's id); `memory remember --definition --run --user`
then writes through the memory tools, whose invocation check stays whole. Each command calls one act of
`functions.actions.appstate` in this process (the database alone, no embedder) and prints one line per row,
or JSON with `--json`; a refusal is one line with its code (`user_has_memories`: erase the person first;
`agent_in_use`: archive it). `--quiet` on the adding commands prints the new id alone, for a shell variable.
This module must never write a row except through that module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, TypeVar
from uuid import UUID

import typer

from functions.cli._common import JsonFlag, OrgRequired, console, open_cli_database, print_json, run, safe
from functions.cli.errors import CliError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from state.db import Database

__all__ = ["agent_app", "run_app", "user_app"]

T = TypeVar("T")

user_app = typer.Typer(help="Add, list and remove the members of an organization.", no_args_is_help=True)
agent_app = typer.Typer(help="Add, list, archive and remove an organization's agent definitions.", no_args_is_help=True)
run_app = typer.Typer(help="Start, list and finish the runs a memory write names.", no_args_is_help=True)

_HINTS = {
    "user_has_memories": "erase the person first: `ac-context erase user USER_ID --org ORG --yes`",
    "agent_in_use": "archive it instead: `ac-context agent archive AGENT_ID --org ORG`",
    "agent_archived": "publish it again: `ac-context agent publish AGENT_ID --org ORG`",
    "user_email_taken": "list the members with `ac-context user list --org ORG`",
    "agent_name_taken": "list the agents with `ac-context agent list --org ORG`",
}


def _canonical_id(value: str) -> UUID:
    """A UUID argument: canonical text only, else a usage error naming the rule (never the value)."""
    from state.ids import UUID_RULE, parse_canonical_uuid

    try:
        return parse_canonical_uuid(value)
    except ValueError:
        raise typer.BadParameter(f"not a valid UUID: it must be {UUID_RULE}") from None


Id = Annotated[UUID, typer.Argument(help="Its id (a lower-case hyphenated UUID).", parser=_canonical_id)]
QuietFlag = Annotated[bool, typer.Option("--quiet", "-q", help="Print the new id alone (for a shell variable).")]
Limit = Annotated[int, typer.Option("--limit", min=1, max=1000, help="The most rows printed.")]


def _act(body: Callable[[Database], Awaitable[T]]) -> T:
    """Run one act on the CLI's database; a refusal gets the next step where one helps."""
    from functions.errors import ApiError

    async def main() -> T:
        async with open_cli_database() as db:
            return await body(db)

    try:
        return run(main)
    except ApiError as exc:
        if exc.code in _HINTS:
            raise CliError(exc.code, str(exc), hint=_HINTS[exc.code]) from None
        raise


def _caller() -> Any:
    from functions.cli.erase import cli_caller

    return cli_caller()


def _added(row: dict[str, Any], what: str, *, as_json: bool, quiet: bool) -> None:
    if as_json:
        print_json(row)
    elif quiet:
        typer.echo(row["id"])
    else:
        console.print(f"added {what}: {row['id']}")


@user_app.command("add")
def user_add(
    email: Annotated[str, typer.Argument(help="Its email, unique in the organization (any case).")],
    org: OrgRequired,
    name: Annotated[str | None, typer.Option("--name", help="Its display name.")] = None,
    quiet: QuietFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Add a member of the organization and print its id (what --user names)."""
    from functions.actions import appstate

    user = _act(lambda db: appstate.add_user(db, _caller(), org, email=email, display_name=name))
    _added(user.as_json(), f"user {safe(user.email)}", as_json=as_json, quiet=quiet)


@user_app.command("list")
def user_list(org: OrgRequired, limit: Limit = 100, as_json: JsonFlag = False) -> None:
    """The organization's members, oldest first, with their memory revisions and runs."""
    from functions.actions import appstate

    rows, total = _act(lambda db: appstate.list_users(db, _caller(), org, limit=limit))
    if as_json:
        print_json({"items": [u.as_json() for u in rows], "total": total})
        return
    if not rows:
        console.print("no users yet; add one with `ac-context user add EMAIL --org ORG`", markup=False)
    for u in rows:
        shown = f" ({safe(u.display_name)})" if u.display_name else ""
        console.print(f"{u.id}  [bold]{safe(u.email)}[/]{shown}  {u.memories} memories, {u.runs} runs")
    if total > len(rows):
        console.print(f"[dim]{len(rows)} of {total}; --limit shows more[/]")


@user_app.command("remove")
def user_remove(user_id: Id, org: OrgRequired, as_json: JsonFlag = False) -> None:
    """Remove a member who holds no memory (a member with memories is erased first: `erase user`)."""
    from functions.actions import appstate

    _act(lambda db: appstate.remove_user(db, _caller(), org, user_id))
    print_json({"id": str(user_id), "removed": True}) if as_json else console.print(f"removed user {user_id}")


@agent_app.command("add")
def agent_add(
    name: Annotated[str, typer.Argument(help="Its name, unique in the organization (any case).")],
    org: OrgRequired,
    status: Annotated[str, typer.Option("--status", help="draft, published or archived.")] = "published",
    quiet: QuietFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Add an agent definition (kind agent) and print its id (what --definition and --agent name)."""
    from functions.actions import appstate

    agent = _act(lambda db: appstate.add_agent(db, _caller(), org, name=name, status=status))
    _added(agent.as_json(), f"agent {safe(agent.name)}", as_json=as_json, quiet=quiet)


@agent_app.command("list")
def agent_list(org: OrgRequired, limit: Limit = 100, as_json: JsonFlag = False) -> None:
    """The organization's own agent definitions, oldest first, with their memory revisions and runs."""
    from functions.actions import appstate

    rows, total = _act(lambda db: appstate.list_agents(db, _caller(), org, limit=limit))
    if as_json:
        print_json({"items": [d.as_json() for d in rows], "total": total})
        return
    if not rows:
        console.print("no agents yet; add one with `ac-context agent add NAME --org ORG`", markup=False)
    for d in rows:
        console.print(f"{d.id}  [bold]{safe(d.name)}[/] ({d.status})  {d.memories} memories, {d.runs} runs")
    if total > len(rows):
        console.print(f"[dim]{len(rows)} of {total}; --limit shows more[/]")


def _set_status(agent_id: UUID, org: UUID, status: str, *, as_json: bool) -> None:
    from functions.actions import appstate

    agent = _act(lambda db: appstate.set_agent_status(db, _caller(), org, agent_id, status=status))
    print_json(agent.as_json()) if as_json else console.print(f"agent {agent.id} is {agent.status}")


@agent_app.command("archive")
def agent_archive(agent_id: Id, org: OrgRequired, as_json: JsonFlag = False) -> None:
    """Archive an agent: it starts no run; its memories and runs stay (how one that owns them is retired)."""
    _set_status(agent_id, org, "archived", as_json=as_json)


@agent_app.command("publish")
def agent_publish(agent_id: Id, org: OrgRequired, as_json: JsonFlag = False) -> None:
    """Publish an agent (a draft, or an archived one brought back)."""
    _set_status(agent_id, org, "published", as_json=as_json)


@agent_app.command("remove")
def agent_remove(agent_id: Id, org: OrgRequired, as_json: JsonFlag = False) -> None:
    """Remove an agent that owns no memory and no run (archive one that does)."""
    from functions.actions import appstate

    _act(lambda db: appstate.remove_agent(db, _caller(), org, agent_id))
    print_json({"id": str(agent_id), "removed": True}) if as_json else console.print(f"removed agent {agent_id}")


@run_app.command("start")
def run_start(
    org: OrgRequired,
    agent: Annotated[UUID, typer.Option("--agent", help="The agent definition.", parser=_canonical_id)],
    user: Annotated[UUID, typer.Option("--user", help="The member the run acts for.", parser=_canonical_id)],
    quiet: QuietFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Start a run of an agent for a member and print its id (what `memory remember --run` names)."""
    from functions.actions import appstate

    started = _act(lambda db: appstate.start_run(db, _caller(), org, definition_id=agent, user_id=user))
    row = started.as_json()
    if as_json:
        print_json(row)
    elif quiet:
        typer.echo(row["id"])
    else:
        console.print(f"started run {row['id']}")


@run_app.command("list")
def run_list(
    org: OrgRequired,
    agent: Annotated[UUID | None, typer.Option("--agent", help="Only this agent's runs.", parser=_canonical_id)] = None,
    user: Annotated[
        UUID | None, typer.Option("--user", help="Only the runs for this member.", parser=_canonical_id)
    ] = None,
    limit: Limit = 100,
    as_json: JsonFlag = False,
) -> None:
    """The organization's runs, newest first."""
    from functions.actions import appstate

    rows = _act(lambda db: appstate.list_runs(db, _caller(), org, definition_id=agent, user_id=user, limit=limit))
    if as_json:
        print_json({"items": [r.as_json() for r in rows]})
        return
    if not rows:
        console.print("no runs", markup=False)
    for r in rows:
        console.print(f"{r.id}  {r.status}  agent {r.definition_id}  user {r.user_id}  [dim]{r.created_at}[/]")


@run_app.command("finish")
def run_finish(
    run_id: Id,
    org: OrgRequired,
    status: Annotated[str, typer.Option("--status", help="succeeded, failed or cancelled.")] = "succeeded",
    as_json: JsonFlag = False,
) -> None:
    """End a running run."""
    from functions.actions import appstate

    finished = _act(lambda db: appstate.finish_run(db, _caller(), org, run_id, status=status))
    print_json(finished.as_json()) if as_json else console.print(f"run {finished.id} {finished.status}")
