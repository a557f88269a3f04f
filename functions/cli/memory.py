"""`ac-context memory remember|forget|list|sweep|export|import`: memory's tools, reads, sweep and moves.

`remember` and `forget` call the same tool handlers the HTTP API serves, as a given run of a given agent
definition (a user run, or a trigger run with `--trigger`); `remember --ttl P30D` or `--expires-at
2027-03-31T00:00:00Z` sets its expiry. `sweep` runs the hourly expiry sweep once (`memory.expiry`). `export
--org ORG [--user U] > f.jsonl` writes the organization's (or the person's) chains as JSONL to stdout, and
`import f.jsonl --org ORG` rebuilds them in an organization and prints the receipt (`functions.actions
.memory_transfer`); a refused file is one line with its code and the first bad line. This module must never
write memory except through `memory.tools.MemoryTools`, `memory.expiry.sweep_expired` and the import act.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

import typer

from functions.cli._common import JsonFlag, OrgRequired, console, open_cli_services, parse_refs, print_json, run, safe
from functions.cli._paging import MAX_LIMIT, AllFlag, CursorOption, limit_option, print_page_note, read_pages
from functions.cli._service import ask_pages

if TYPE_CHECKING:
    from memory.models import ToolInvocation
    from state.receipts import Receipt

__all__ = ["memory_app"]

memory_app = typer.Typer(
    help="Remember, forget and list durable memories (through the memory tools); export and import them.",
    no_args_is_help=True,
)

Org = OrgRequired
Definition = Annotated[UUID, typer.Option("--definition", help="The agent definition that owns the memory.")]
RunId = Annotated[UUID, typer.Option("--run", help="The run that calls the tool.")]
User = Annotated[UUID | None, typer.Option("--user", help="The person the run acts for.")]
Trigger = Annotated[UUID | None, typer.Option("--trigger", help="The trigger, for a trigger run.")]


def _call(tool: str, inv: ToolInvocation, arguments: dict[str, Any]) -> dict[str, Any]:
    from functions.actions.memory import call_tool
    from functions.actions.scope import CLI

    async def main() -> dict[str, Any]:
        async with open_cli_services() as svc:
            return await call_tool(svc, CLI, tool, inv, arguments)

    return run(main)


def _invocation(org: UUID, definition: UUID, run_id: UUID, user: UUID | None, trigger: UUID | None) -> ToolInvocation:
    from memory.models import ToolInvocation

    try:
        return ToolInvocation(org, definition, run_id, user_id=user, trigger_id=trigger)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


@memory_app.command()
def remember(
    attribute: Annotated[str, typer.Option(help="observation.<name> or preference.<name>.")],
    text: Annotated[str, typer.Option(help="What to remember.")],
    org: Org,
    definition: Definition,
    run_id: RunId,
    user: User = None,
    trigger: Trigger = None,
    scope: Annotated[str, typer.Option(help="user or organization.")] = "organization",
    ref: Annotated[list[str] | None, typer.Option("--ref", help="The subject, as kind:id (at most one).")] = None,
    expires_at: Annotated[
        str | None,
        typer.Option("--expires-at", help="When it expires: a date-time with offset (2027-03-31T00:00:00Z)."),
    ] = None,
    ttl: Annotated[
        str | None, typer.Option("--ttl", help="How long it lives: an ISO 8601 duration (P30D, PT12H).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Append a memory revision through `memory.remember` (with no expiry, the namespace default applies)."""
    from memory.tools import REMEMBER_TOOL

    refs = [r.model_dump(exclude_none=True) for r in parse_refs(ref or [])]
    arguments: dict[str, Any] = {"attribute": attribute, "text": text, "scope": scope, "subject_refs": refs}
    if expires_at is not None:
        arguments["expires_at"] = expires_at
    if ttl is not None:
        arguments["ttl"] = ttl
    result = _call(REMEMBER_TOOL, _invocation(org, definition, run_id, user, trigger), arguments)
    until = "" if result["expires_at"] is None else f", expires {result['expires_at']}"
    print_json(result) if as_json else console.print(
        f"remembered {result['memory_id']} ({safe(result['subject_key'])}{until})"
    )


@memory_app.command()
def forget(
    memory_id: Annotated[UUID, typer.Argument(help="The id of a current live memory.")],
    org: Org,
    definition: Definition,
    run_id: RunId,
    user: User = None,
    trigger: Trigger = None,
    as_json: JsonFlag = False,
) -> None:
    """Append a tombstone through `memory.forget`."""
    from memory.tools import FORGET_TOOL

    result = _call(FORGET_TOOL, _invocation(org, definition, run_id, user, trigger), {"memory_id": str(memory_id)})
    print_json(result) if as_json else console.print(f"forgot {memory_id} (tombstone {result['memory_id']})")


@memory_app.command("list")
def list_memories(
    org: Org,
    definition: Annotated[UUID | None, typer.Option("--definition", help="Only this definition's memories.")] = None,
    user: Annotated[UUID | None, typer.Option("--user", help="Only this person's memories (their user scope).")] = None,
    limit: Annotated[int, limit_option(50, "memories")] = 50,
    cursor: CursorOption = None,
    everything: AllFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """The live memories of an organization (both scopes) or of one person, newest first, with their expiry."""
    query = {"organization_id": org, "user_id": user, "definition_id": definition}
    answered = ask_pages(
        "/v1/memory/memories", query, cursor=cursor, limit=limit, everything=everything, max_limit=MAX_LIMIT
    )
    rows, total, next_cursor = (
        answered if answered is not None else _memories_here(org, user, definition, cursor, limit, everything)
    )
    if as_json:
        print_json(rows)
        print_page_note(len(rows), total, "memories", next_cursor, as_json=True)
        return
    for row in rows:
        expiry = f" expires {row['expires_at']}" if row["expires_at"] else ""
        console.print(
            f"[bold]{safe(row['subject_key'])}[/] ({row['scope']}) {safe(row['text'])}  [dim]{row['id']}{expiry}[/]"
        )
    print_page_note(len(rows), total, "memories", next_cursor)


def _memories_here(
    org: UUID, user: UUID | None, definition: UUID | None, cursor: str | None, limit: int, everything: bool
) -> tuple[list[dict[str, Any]], int, str | None]:
    """The page (or pages) of live memories read in this process."""
    from functions.actions.memory import memories_page
    from functions.actions.scope import CLI

    async def main() -> tuple[list[dict[str, Any]], int, str | None]:
        async with open_cli_services() as svc:
            page = await read_pages(
                lambda c, n: memories_page(
                    svc.db, CLI, org, user_id=user, definition_id=definition, cursor=c, limit=n
                ),
                cursor=cursor, limit=limit, everything=everything,
            )  # fmt: skip
        return [m.as_json() for m in page.items], page.total, page.next_cursor

    return run(main)


@memory_app.command()
def sweep(
    limit: Annotated[int, typer.Option(min=1, max=100_000, help="Close at most this many expired chains.")] = 10_000,
    as_json: JsonFlag = False,
) -> None:
    """Close every expired memory chain with a tombstone, as the hourly `memory-expiry-sweep` does."""
    from memory.expiry import DEFAULT_SWEEP_LIMIT, sweep_expired

    async def main() -> int:
        async with open_cli_services() as svc:
            total = 0
            while total < limit:
                batch = min(DEFAULT_SWEEP_LIMIT, limit - total)
                closed = await sweep_expired(svc.db, limit=batch)
                total += closed
                if closed < batch:
                    break
            return total

    closed = run(main)
    print_json({"tombstoned": closed}) if as_json else console.print(f"closed {closed} expired memory chain(s)")


@memory_app.command("export")
def export_cmd(
    org: Org,
    user: Annotated[UUID | None, typer.Option("--user", help="Only this person's user-scope chains.")] = None,
) -> None:
    """Write every revision of the organization's (or the person's) memory chains to stdout, one JSON line each."""
    import sys

    from functions.actions.memory_transfer import export_memories
    from functions.cli.erase import cli_caller

    async def main() -> int:
        written = 0
        async with open_cli_services() as svc:
            async for line in await export_memories(svc.db, cli_caller(), org, user_id=user):
                sys.stdout.write(line)
                written += 1
        sys.stdout.flush()
        return written

    written = run(main)
    typer.echo(f"exported {written} revision(s)", err=True)  # stderr: stdout is the file


@memory_app.command("import")
def import_cmd(
    path: Annotated[Path, typer.Argument(help="An export (JSONL).", exists=True, dir_okay=False, readable=True)],
    org: Org,
    definition: Annotated[
        UUID | None, typer.Option("--definition", help="Write every chain under this agent definition.")
    ] = None,
    user: Annotated[UUID | None, typer.Option("--user", help="Give every user-scope chain to this member.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Import an export into the organization: chains rebuilt with new ids; prints the receipt."""
    from functions.actions.memory_transfer import import_file
    from functions.cli.erase import cli_caller
    from memory.transfer import MAX_IMPORT_BYTES, ImportTooLargeError

    if path.stat().st_size > MAX_IMPORT_BYTES:
        raise ImportTooLargeError(f"the file is larger than the {MAX_IMPORT_BYTES}-byte limit")
    data = path.read_bytes()

    async def main() -> Receipt:
        async with open_cli_services() as svc:
            return await import_file(svc, cli_caller(), org, data, definition_id=definition, user_id=user)

    receipt = run(main)
    if as_json:
        print_json(receipt.as_json())
        return
    console.print(f"receipt [bold]{receipt.id}[/] (memory_import, {receipt.status}) in organization {org}")
    counts = ", ".join(f"{safe(k)}: {v}" for k, v in receipt.counts.items()) or "nothing"
    console.print(f"  {counts}")
