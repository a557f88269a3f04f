"""`ac-context ingest`, `search`, `sweep` and `switch-model`: knowledge from the command line.

`ingest` registers files (directories recursively) and runs bulk ingestion in this process with a progress
bar in documents and chunks (`--owner` and `--review-by YYYY-MM-DD` set every file's owner and review date,
under the re-upload rule of `knowledge.ingestion.review`), then prints a summary (or, with `--send-event`,
leaves the work to the `knowledge-ingest-batch` function); `switch-model` runs a switchover in this process (or sends
`knowledge/model.switch.requested`) after one test call shows the model can embed, and
`switch-model --status|--cancel` show or stop the running switch of a scope. This module must never
hold ingestion logic.

Only typer and the CLI's own helpers are imported at the top, so `--help` loads no core module: each
command imports what it runs. `knowledge.search`'s two defaults are restated here, because typer reads
them when it builds the help (a unit test holds them equal).
"""

from __future__ import annotations

import mimetypes
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final
from uuid import UUID

import typer
from rich.console import Console

from functions.cli._common import (
    JsonFlag,
    OrgOption,
    OrgRequired,
    console,
    open_cli_search,
    open_cli_services,
    plain,
    print_json,
    progress,
    run,
    safe,
    snippet,
)
from functions.cli._events import end_if_queued
from functions.cli._ingest_files import collect_files, print_summary

if TYPE_CHECKING:
    from functions._services import Services
    from knowledge.ingestion.bulk import SourceOutcome
    from knowledge.ingestion.registration import RegisteredSource
    from knowledge.ingestion.review import Review
    from state.db import Database

__all__ = ["DEFAULT_KEEP_TOP", "DEFAULT_MIN_RELEVANCE", "DEFAULT_PER_SOURCE", "register"]

DEFAULT_MIN_RELEVANCE: Final = 0.25
"""`knowledge.search.DEFAULT_MIN_RELEVANCE`, restated for the help text."""
DEFAULT_KEEP_TOP: Final = 0
"""`knowledge.search.DEFAULT_KEEP_TOP`, restated for the help text."""
DEFAULT_PER_SOURCE: Final = 3
"""`knowledge.search.DEFAULT_PER_SOURCE`, restated for the help text."""
SNIPPET_CHARS: Final = 240
"""The most characters of a hit's text `search` prints, cut at a word boundary with an ellipsis."""

PlatformFlag = Annotated[bool, typer.Option("--platform", help="A platform document (shared by every organization).")]


def _scope(org: UUID | None, platform: bool) -> UUID | None:
    if (org is not None) != platform:
        return org
    raise typer.BadParameter("give --org or --platform, exactly one")


IncludeOption = Annotated[
    list[str] | None, typer.Option("--include", help="Only files matching this glob (repeatable), e.g. '*.md'.")
]
ExcludeOption = Annotated[
    list[str] | None, typer.Option("--exclude", help="Skip files matching this glob (repeatable).")
]
WAVE_FILES = 500
"""Files read, registered and ingested at once (bounds the bytes held in memory)."""


def ingest(
    paths: Annotated[
        list[Path], typer.Argument(help="Files or directories (recursive) to ingest: PDF, Markdown, HTML, text.")
    ],
    org: OrgOption = None,
    platform: PlatformFlag = False,
    include: IncludeOption = None,
    exclude: ExcludeOption = None,
    uri: Annotated[
        str | None, typer.Option("--uri", help="Sync one file as the content of this URI (a re-sync replaces it).")
    ] = None,
    send_event: Annotated[bool, typer.Option("--send-event", help="Leave the work to the Inngest functions.")] = False,
    owner: Annotated[
        str | None, typer.Option("--owner", help="Who answers for the documents (at most 200 characters).")
    ] = None,
    review_by: Annotated[
        str | None, typer.Option("--review-by", help="Their review date, YYYY-MM-DD; past it they are overdue.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Register documents and make them searchable; exits 1 when any document failed."""
    from knowledge.ingestion.review import Review, clean_owner, parse_review_by

    scope = _scope(org, platform)
    review = Review(
        owner=clean_owner(owner, loc=("--owner",)), review_by=parse_review_by(review_by, loc=("--review-by",))
    )
    for path in paths:
        if not path.exists():
            raise typer.BadParameter(f"{path} does not exist")
    walk = collect_files(paths, include or [], exclude or [])
    files = walk.files
    skipped = walk.skipped_line()
    if skipped is not None:
        Console(stderr=True).print(plain(skipped))
    if uri is not None and len(files) != 1:
        raise typer.BadParameter("--uri syncs exactly one file")
    results = run(lambda: _ingest_files(files, scope, uri, send_event, review=review))
    if as_json:
        print_json(results)
    else:
        print_summary(console, results)
    if any(row["status"] == "failed" for row in results):
        raise typer.Exit(1)
    queued = [row for row in results if row["status"] == QUEUED]
    if queued:
        end_if_queued("queued", queued[0].get("event_error"), f"the ingestion of {len(queued)} pending source(s)")


async def _ingest_files(
    files: list[Path],
    scope: UUID | None,
    uri: str | None,
    send_event: bool,
    stats: dict[str, float] | None = None,
    *,
    review: Review | None = None,
) -> list[dict[str, Any]]:
    """Register `files` in waves, then ingest every pending one in one bulk run.

    Registration holds one wave's bytes at a time; the bulk run's writes overlap its next waves' extraction.
    `stats`, when given, collects the seconds of each stage.
    """
    from knowledge.ingestion.core import ingest_batch
    from knowledge.ingestion.registration import Document, register_many

    seconds = stats if stats is not None else {}
    registered: list[RegisteredSource] = []
    async with open_cli_services() as svc:
        with progress() as bar:
            task = bar.add_task("registering", total=len(files))
            started = time.perf_counter()
            for start in range(0, len(files), WAVE_FILES):
                wave = files[start : start + WAVE_FILES]
                docs = [
                    Document(
                        p.read_bytes(),
                        p.name,
                        media_type=mimetypes.guess_type(p.name)[0],
                        uri=uri,
                        owner=None if review is None else review.owner,
                        review_by=None if review is None else review.review_by,
                    )
                    for p in wave
                ]
                registered += await register_many(svc.db, svc.object_store, organization_id=scope, documents=docs)
                bar.update(task, completed=len(registered))
            seconds["register"] = time.perf_counter() - started
            pending = list(dict.fromkeys(r.source_id for r in registered if r.status == "pending"))
            outcomes: dict[UUID, SourceOutcome] = {}
            sent: tuple[str, str | None] | None = None
            if send_event:
                sent = await _enqueue_and_send(svc, pending, scope, sync=any(r.outcome == "resync" for r in registered))
            elif pending:
                work = bar.add_task("ingesting: 0 chunks", total=len(pending))

                def advance(documents: int, chunks: int) -> None:
                    bar.update(work, completed=documents, description=f"ingesting: {chunks:,} chunks")

                kit = svc.ingestion
                batch = await ingest_batch(kit, pending, on_progress=advance)
                assert batch.result is not None  # the inline runner ran the step here
                outcomes = {o.source_id: o for o in batch.result.outcomes}
                result = batch.result
                seconds.update(extract=result.extract_s, embed=result.embed_s, write=result.write_s)
        rows = [_row(path, reg, outcomes.get(reg.source_id), sent) for path, reg in zip(files, registered, strict=True)]
        if any(row["status"] == "failed (earlier)" for row in rows):
            await _reasons(svc.db, rows)
    return rows


def _media(path: Path) -> str | None:
    return mimetypes.guess_type(path.name)[0]


QUEUED: Final = "pending (event queued)"
"""A row whose ingestion event waits in the outbox (`--send-event` with no Inngest server answering)."""


def _row(
    path: Path, reg: RegisteredSource, outcome: SourceOutcome | None, sent: tuple[str, str | None] | None
) -> dict[str, Any]:
    row: dict[str, Any] = {"file": str(path), "source_id": str(reg.source_id), "registered": reg.outcome}
    if reg.status == "failed":
        row.update(status="failed (earlier)", failure_reason=None)
    elif reg.status == "ready" or (outcome is not None and outcome.status == "unchanged"):
        row.update(status="unchanged")
    elif sent is not None and sent[0] == "queued":
        row.update(status=QUEUED, event_error=sent[1])
    elif sent is not None:
        row.update(status="pending (event sent)")
    elif outcome is not None:
        row.update(status=outcome.status, failure_reason=outcome.reason, chunks=outcome.chunks)
    else:
        row.update(status="pending")
    return row


async def _reasons(db: Database, rows: list[dict[str, Any]]) -> None:
    """Fill in the stored reason of the documents that had failed before this run (a retry resets them)."""
    from knowledge.errors import SourceNotFoundError
    from knowledge.ingestion.sources import get_source

    for row in rows:
        if row["status"] == "failed (earlier)":
            try:
                reason = (await get_source(db, UUID(row["source_id"]))).failure_reason
            except SourceNotFoundError:
                reason = "the source was deleted"
            row.update(status="failed", failure_reason=f"{reason} (failed earlier; retry the source first)")


async def _enqueue_and_send(
    svc: Services, source_ids: list[UUID], scope: UUID | None, *, sync: bool
) -> tuple[str, str | None]:
    """Write the ingestion events of `source_ids` to the outbox and try to send them: (status, error)."""
    from functions._announce import batch_events, ingest_event
    from functions.cli._events import deliver
    from state import outbox

    if not source_ids:
        return "sent", None
    events = [ingest_event(source_ids[0], scope, sync=True)] if sync and len(source_ids) == 1 else []
    async with svc.db.connection() as conn, conn.transaction():
        ids = await outbox.enqueue(conn, events or batch_events(source_ids, scope))
    delivery = await deliver(svc, ids)
    return delivery.status, delivery.error


def search(
    query: Annotated[str, typer.Argument(help="The question.")],
    org: OrgRequired,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 8,
    platform: Annotated[bool, typer.Option("--platform/--no-platform", help="Join platform documents.")] = True,
    min_relevance: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Drop hits neither search half finds relevant (0 keeps all).")
    ] = DEFAULT_MIN_RELEVANCE,
    keep_top: Annotated[
        int,
        typer.Option(
            min=0, max=1000, help="Keep what either half ranks in its top N above 0.83 of the floor (0: none)."
        ),
    ] = DEFAULT_KEEP_TOP,
    per_source: Annotated[int, typer.Option(min=1, max=1000, help="The most chunks one document places by rank.")] = (
        DEFAULT_PER_SOURCE
    ),
    as_json: JsonFlag = False,
) -> None:
    """Hybrid search over the organization's (and the platform's) ready documents."""
    hits = _search_over_http(
        query, org, limit=limit, platform=platform, min_relevance=min_relevance, keep_top=keep_top,
        per_source=per_source,
    )  # fmt: skip
    if hits is None:
        hits = _search_here(
            query, org, limit=limit, platform=platform, min_relevance=min_relevance, keep_top=keep_top,
            per_source=per_source,
        )  # fmt: skip
    if as_json:
        print_json(hits)
        return
    for n, hit in enumerate(hits, 1):
        console.print(
            f"[bold]{n}. {safe(hit['source'])}[/] #{hit['ordinal']} ({hit['score']:.4f})  source {hit['source_id']}"
        )
        console.print(plain(f"   {snippet(hit['text'], SNIPPET_CHARS)}"))


MAX_SEARCH_QUERY: Final = 2000
"""`SearchIn.query`'s bound: a longer (or an empty) query is searched here, as the API would refuse it."""


def _search_over_http(
    query: str, org: UUID, *, limit: int, platform: bool, min_relevance: float, keep_top: int, per_source: int
) -> list[dict[str, Any]] | None:
    """The hits a running service found, as `search` prints them; None when none runs."""
    from functions.cli._service import ask

    if not 1 <= len(query) <= MAX_SEARCH_QUERY:
        return None
    body = {
        "organization_id": str(org), "query": query, "limit": limit, "include_platform": platform,
        "include_organization": True, "min_relevance": min_relevance, "keep_top": keep_top, "per_source": per_source,
    }  # fmt: skip
    answer = ask("POST", "/v1/knowledge/search", body=body)
    if answer is None:
        return None
    return [
        {"score": h["score"], "source_id": h["source_id"], "source": h["source_title"], "ordinal": h["ordinal"],
         "text": h["text"]}
        for h in answer["hits"]
    ]  # fmt: skip


def _search_here(
    query: str, org: UUID, *, limit: int, platform: bool, min_relevance: float, keep_top: int, per_source: int
) -> list[dict[str, Any]]:
    """The hits of a search run in this process (the database opened here)."""
    from functions.actions.scope import CLI
    from functions.actions.search import search_knowledge

    async def main() -> list[dict[str, Any]]:
        async with open_cli_search() as svc:
            hits = await search_knowledge(
                svc.db, svc.embedders.get, CLI, org, query, include_platform=platform, include_organization=True,
                limit=limit, min_relevance=min_relevance, keep_top=keep_top, per_source=per_source,
            )  # fmt: skip
        return [
            {"score": h.score, "source_id": str(h.source_id), "source": h.source_title, "ordinal": h.ordinal,
             "text": h.text}
            for h in hits
        ]  # fmt: skip

    return run(main)


def sweep(as_json: JsonFlag = False) -> None:
    """Fail the knowledge sources pending for more than an hour (what the hourly function does)."""
    from knowledge.ingestion.sweep import sweep_pending

    async def main() -> dict[str, int]:
        async with open_cli_services() as svc:
            result = await sweep_pending(svc.db)
        return {"failed": len(result.failed_sources), "failed_models": result.failed_models}

    result = run(main)
    print_json(result) if as_json else console.print(f"failed {result['failed']} stale source(s)")


def switch_model(
    model: Annotated[str | None, typer.Argument(help="The new embedding model id.")] = None,
    org: OrgOption = None,
    status: Annotated[bool, typer.Option("--status", help="Show the running switch of the scope.")] = False,
    cancel: Annotated[bool, typer.Option("--cancel", help="Cancel the running switch; the old model stays.")] = False,
    send_event: Annotated[bool, typer.Option("--send-event", help="Let knowledge-model-switch do it.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Switch the live embedding model of an organization (or of the platform default, without --org).

    The model must embed one test text first (its key present, its provider answering), so a switch that
    could never finish is refused before it opens. `--status` shows the running switch, `--cancel` stops it.
    """
    if status and cancel:
        raise typer.BadParameter("give --status or --cancel, not both")
    if status or cancel:
        if model is not None:
            raise typer.BadParameter("--status and --cancel take no model")
        _switch_status(org, cancel=cancel, as_json=as_json)
        return
    if model is None:
        raise typer.BadParameter("name the model to switch to (or give --status or --cancel)", param_hint="MODEL")
    from knowledge.embedding.registry import require_real_model

    require_real_model(model)  # before anything opens or is sent: a `test/*` model only in the test suite
    if send_event:
        _request_switch(model, org, as_json=as_json)
        return
    from functions._memory_switch import memory_fill
    from knowledge.embedding.live_model import begin_switch
    from knowledge.switchover import run_switch

    async def main() -> dict[str, Any]:
        async with open_cli_services() as svc:
            plan = await begin_switch(svc.db, org, model, embedder=svc.embedders.get(model))
            if plan.already_live:
                return {"model": model, "flipped": False, "reason": "already live"}
            with progress() as bar:
                task = bar.add_task(f"re-embedding under {model}", total=len(plan.source_ids))

                memories: dict[str, Any] = {}  # the memories' task, added at the first memory the fill embeds

                def advance(done: int, known: int) -> None:
                    bar.update(task, completed=done, total=known)

                def filled(embedded: int) -> None:
                    if not memories:
                        memories.update(task=bar.add_task(f"re-embedding under {model} memories", total=0), done=0)
                    memories["done"] += embedded
                    bar.update(memories["task"], completed=memories["done"], total=memories["done"])

                fill = memory_fill(svc.db, org, svc.embedders.get, on_fill=filled)
                flipped = await run_switch(
                    svc.db, svc.object_store, plan, embedders=svc.embedders.get, on_progress=advance, fill=fill
                )
        return {
            "model": model,
            "flipped": True,
            "from_model": flipped.from_model,
            "dropped_chunks": flipped.dropped_chunks,
            "memories_embedded": flipped.memories_embedded,
        }

    result = run(main)
    if as_json:
        print_json(result)
    elif result["flipped"]:
        console.print(
            plain(
                f"{model} is live (was {result['from_model']}); {result['dropped_chunks']} old chunks deleted, "
                f"{result['memories_embedded']} memories embedded"
            )
        )
    else:
        console.print(plain(f"{model} is already the live model; nothing to do"))


def _request_switch(model: str, org: UUID | None, *, as_json: bool) -> None:
    """Write the switch event to the outbox and try to send it; exits `EXIT_QUEUED` when it waits there."""
    from functions.cli._events import deliver, end_if_queued
    from functions.events import EVENT_SWITCH
    from state import outbox
    from state.outbox import OutboxEvent

    data = {"organization_id": None if org is None else str(org), "model": model}

    async def main() -> tuple[str, list[str], str | None]:
        async with open_cli_services() as svc:
            async with svc.db.connection() as conn, conn.transaction():
                ids = await outbox.enqueue(conn, [OutboxEvent(EVENT_SWITCH, data, org)])
            delivery = await deliver(svc, ids)
        return delivery.status, list(delivery.event_ids), delivery.error

    status, ids, error = run(main)
    print_json({"event_ids": ids, "event_status": status}) if as_json else console.print(f"switch requested: {ids}")
    end_if_queued(status, error, "the switch request")


def _switch_status(org: UUID | None, *, cancel: bool, as_json: bool) -> None:
    """Show (or cancel) the running switch of a scope."""
    from functions._switch_view import switch_view
    from functions.actions.scope import CLI
    from functions.actions.switch import cancel_switch

    scope = "the platform default" if org is None else f"organization {org}"

    async def main() -> dict[str, Any]:
        async with open_cli_services() as svc:
            if not cancel:
                return await switch_view(svc.db, org)
            done = await cancel_switch(svc, CLI, org)
            out: dict[str, Any] = {"organization_id": None if org is None else str(org)}
            out["running"] = out["cancelled"] = done.cancelled
            if done.cancelled:
                out |= {"from_model": done.from_model, "to_model": done.to_model, "dropped_chunks": done.dropped_chunks}
            out["live_model"] = done.live_model
            return out

    out = run(main)
    if as_json:
        print_json(out)
    elif not out["running"]:
        console.print(plain(f"no switch is running for {scope}; {out['live_model']} is live"))
    elif cancel:
        console.print(
            plain(
                f"cancelled the switch of {scope} to {out['to_model']}; {out['live_model']} stays live, "
                f"{out['dropped_chunks']} chunks of {out['to_model']} deleted"
            )
        )
    else:
        console.print(
            plain(
                f"switch of {scope}: {out['from_model']} -> {out['to_model']} since {out['started_at']}: "
                f"{out['phase']}; {out['ready']}/{out['total']} ready, {out['pending']} pending, "
                f"{out['failed']} failed, {out['missing']} missing"
            )
        )
        for w in out["waiting_for"]:
            age = "" if w["pending_age_s"] is None else f" for {w['pending_age_s']:.0f} s"
            reason = f": {w['failure_reason']}" if w["failure_reason"] else ""
            console.print(plain(f"  waiting for {w['title']} ({w['source_id']}): {w['status']}{age}{reason}"))


def register(app: typer.Typer) -> None:
    """Add the knowledge commands to the CLI."""
    app.command()(ingest)
    app.command()(search)
    app.command()(sweep)
    app.command("switch-model")(switch_model)
