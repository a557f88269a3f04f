"""`ac-context sources list|show|retry|delete`: the knowledge sources as an operator sees them.

`list` answers the sources of one scope, one record each (the id whole on its first line, at any terminal
width), with their status, failure reason, pending age, owner, review date and chunk counts per model
(`--overdue`: only the sources whose review date is before today in UTC; `--status`; `--title TEXT`;
`--limit N`, `--cursor C` or `--all`, and a page with more after it names the next page's cursor,
`functions.cli._paging`); `show`
one source in full; `retry` resets a failed source and runs its ingestion here (or, with `--send-event`,
sends `knowledge/source.retry.requested` for the worker), by the one retry rule
(`functions.actions.knowledge.retry`: a pending or ready source is `source_not_failed`); `delete ID --yes` deletes one
(`knowledge.ingestion.delete`) and prints its receipt: `--org` limits it to that organization's sources, and a
platform source needs `--platform`, since the command line holds the database's rights. This module must
never extract, chunk or embed itself: it calls the ingestion the `knowledge-ingest` function runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

import typer
from rich.text import Text

from functions.cli._common import JsonFlag, OrgOption, console, open_cli_services, plain, print_json, run, safe
from functions.cli._events import EXIT_QUEUED, end_if_queued
from functions.cli._paging import AllFlag, CursorOption, limit_option, print_page_note, read_pages
from functions.cli.errors import CliError

if TYPE_CHECKING:
    from knowledge.ingestion.sources import ModelReadiness, SourceView

__all__ = ["sources_app"]

sources_app = typer.Typer(help="List, show, retry and delete knowledge sources.", no_args_is_help=True)
PlatformFlag = Annotated[bool, typer.Option("--platform", help="The platform documents.")]
_STATUS_STYLE = {"ready": "green", "failed": "red", "pending": "yellow"}


def _scope(org: UUID | None, platform: bool) -> UUID | None:
    if (org is not None) != platform:
        return org
    raise typer.BadParameter("give --org or --platform, exactly one")


def _age(since: datetime | None) -> str:
    if since is None:
        return ""
    seconds = int((datetime.now(UTC) - since).total_seconds())
    return (
        f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
    )


def _json(v: SourceView, models: list[ModelReadiness]) -> dict[str, Any]:
    return {
        **v.identity_json(),
        "pending_since": None if v.pending_since is None else v.pending_since.isoformat(),
        "pending_age": _age(v.pending_since) if v.status == "pending" else None,
        "models": [
            {
                "model": m.model,
                "status": m.status,
                "chunks": m.chunk_count,
                "embedded": m.embedded_count,
                "failure_reason": m.failure_reason,
            }
            for m in models
            if m.source_id == v.id
        ],
    }


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _chunks(row: dict[str, Any]) -> str:
    return ", ".join(f"{m['model']}: {_count(m['chunks'])} ({m['status']})" for m in row["models"])


@sources_app.command("list")
def list_cmd(
    org: OrgOption = None,
    platform: PlatformFlag = False,
    status: Annotated[str | None, typer.Option(help="Only sources in this status: pending, ready or failed.")] = None,
    title: Annotated[str | None, typer.Option("--title", help="Only those whose title contains this text.")] = None,
    limit: Annotated[int, limit_option(100, "sources")] = 100,
    cursor: CursorOption = None,
    everything: AllFlag = False,
    overdue: Annotated[
        bool, typer.Option("--overdue", help="Only the sources past their review date (before today, UTC).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """The sources of an organization (or the platform), newest first, with reasons, owners and chunk counts.

    One record per source, its id whole; a page with more after it names the next page's cursor.
    """
    from functions.actions.knowledge import sources_page
    from functions.actions.scope import CLI
    from knowledge.ingestion.sources import model_readiness

    scope = _scope(org, platform)
    if status is not None and status not in {"pending", "ready", "failed"}:
        raise typer.BadParameter("pending, ready or failed", param_hint="--status")

    async def main() -> tuple[list[dict[str, Any]], int, str | None]:
        async with open_cli_services() as svc:
            page = await read_pages(
                lambda c, n: sources_page(
                    svc.db, CLI, scope, status=status, overdue=overdue, title=title, cursor=c, limit=n
                ),
                cursor=cursor, limit=limit, everything=everything,
            )  # fmt: skip
            models = await model_readiness(svc.db, [r.source.id for r in page.items])
        return [_json(r.source, models) for r in page.items], page.total, page.next_cursor

    rows, total, next_cursor = run(main)
    if as_json:
        print_json(rows)
        print_page_note(len(rows), total, "sources", next_cursor, as_json=True)
        return
    if not rows:
        console.print(
            ("no overdue sources" if overdue else "no sources")
            + " in this scope"
            + (f" with status {safe(status)}" if status else "")
        )
        return
    for row in rows:
        _print_record(row)
    print_page_note(len(rows), total, "sources", next_cursor)


def _print_record(row: dict[str, Any]) -> None:
    """One source as a record: `id  status  title`, then its reason, owner and review date, chunks per model."""
    head = Text(row["id"], style="bold")
    head.append(f"  {row['status']}  ", style=_STATUS_STYLE.get(row["status"], ""))
    head.append_text(plain(row["title"]))
    console.print(head)
    note = row["failure_reason"] or (f"pending {row['pending_age']}" if row["pending_age"] else "")
    if note:
        console.print(plain(f"    {'reason' if row['failure_reason'] else 'status'}: {note}"))
    review = f"review by {row['review_by']}" + (" (overdue)" if row["overdue"] else "") if row["review_by"] else ""
    who = ", ".join(p for p in (f"owner {row['owner']}" if row["owner"] else "", review) if p)
    if who:
        console.print(plain(f"    {who}"))
    if row["models"]:
        console.print(plain(f"    chunks: {_chunks(row)}"))


@sources_app.command("show")
def show(
    source_id: Annotated[UUID, typer.Argument(help="The source id.")],
    as_json: JsonFlag = False,
) -> None:
    """One source: status, reason, attempts, pending age, and its readiness per model."""
    from functions.actions.knowledge import source_detail
    from functions.actions.scope import CLI

    async def main() -> dict[str, Any]:
        async with open_cli_services() as svc:
            detail = await source_detail(svc.db, CLI, source_id, organization_id=None, any_scope=True)
            return _json(detail.view, detail.models)

    row = run(main)
    if as_json:
        print_json(row)
        return
    scope = row["organization_id"] or "platform"
    console.print(f"[bold]{safe(row['title'])}[/] {row['id']} ({safe(scope)}, {row['kind']})")
    console.print(
        f"status {row['status']}, attempts {row['attempts']}"
        + (f", pending {row['pending_age']}" if row["pending_age"] else "")
    )
    if row["failure_reason"]:
        console.print(plain(f"reason: {row['failure_reason']}"))
    if row["owner"] or row["review_by"]:
        review = f"review by {row['review_by']}" + (" (overdue)" if row["overdue"] else "") if row["review_by"] else ""
        console.print(plain(", ".join(p for p in (f"owner {row['owner']}" if row["owner"] else "", review) if p)))
    for m in row["models"]:
        reason = f" — {m['failure_reason']}" if m["failure_reason"] else ""
        console.print(
            plain(f"  {m['model']}: {m['status']}, {m['embedded']}/{_count(m['chunks'])} chunks embedded{reason}")
        )


@sources_app.command("retry")
def retry(
    source_id: Annotated[UUID, typer.Argument(help="A failed source's id.")],
    send_event: Annotated[bool, typer.Option("--send-event", help="Send the retry event instead.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Reset a failed source to pending and ingest it again (here, or through the worker)."""
    from functions.actions import knowledge
    from functions.actions.scope import CLI
    from functions.cli._events import deliver
    from knowledge.ingestion.sources import get_source

    async def main() -> dict[str, Any]:
        async with open_cli_services() as svc:
            view = await get_source(svc.db, source_id)
            send = (lambda ids: deliver(svc, ids)) if send_event else None
            retried = await knowledge.retry(svc, CLI, source_id, organization_id=view.organization_id, deliver=send)
            out: dict[str, Any] = {"source_id": str(source_id), "models": list(retried.models)}
            if send_event:
                out["event_ids"] = list(retried.event_ids)
                queued = retried.event_status == "queued"
                out["status"] = "pending (event queued)" if queued else "pending (event sent)"
                if queued:
                    out["event_error"] = retried.event_error
                return out
            outcome = await knowledge.ingest_now(svc, source_id)  # the core `knowledge-ingest` runs, steps inline
            out |= {"status": "failed" if outcome.failed_reason else "ready", "failure_reason": outcome.failed_reason}
            out["chunks"] = outcome.chunk_count
            return out

    out = run(main)
    if as_json:
        print_json(out)
        if out["status"] == "failed":
            raise typer.Exit(1)
        if out["status"] == "pending (event queued)":
            raise typer.Exit(EXIT_QUEUED)
        return
    if out["status"] == "failed":
        raise CliError("source_failed", f"source {source_id} failed again: {out['failure_reason']}")
    console.print(plain(f"{source_id}: {out['status']}"))
    end_if_queued(
        "queued" if out["status"] == "pending (event queued)" else "sent", out.get("event_error"), "the retry"
    )


@sources_app.command("delete")
def delete(
    source_id: Annotated[UUID, typer.Argument(help="The source id.")],
    yes: Annotated[bool, typer.Option("--yes", help="Delete it: its chunks, statistics and object.")] = False,
    org: OrgOption = None,
    platform: Annotated[
        bool, typer.Option("--platform", help="Allow deleting a platform source (the operator's right).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete a source for good (with --yes): chunks of every model, statistics, object; prints the receipt."""
    from functions.actions import knowledge
    from functions.actions.scope import CLI

    if not yes:
        raise CliError("confirmation_required", f"deleting source {source_id} removes it for good; add --yes")

    async def main() -> dict[str, Any]:
        async with open_cli_services() as svc:
            receipt = await knowledge.delete(
                svc, CLI, source_id, organization_id=org, allow_platform=platform, requested_by="cli"
            )
            return receipt.as_json()

    out = run(main)
    if as_json:
        print_json(out)
        return
    console.print(plain(f"deleted source {source_id}: receipt {out['id']} ({out['status']})"))
    for name, n in sorted(out["counts"].items()):
        console.print(plain(f"  {name}: {n}"))
    for key in out["object_keys"]:
        console.print(plain(f"  object {key}"))
