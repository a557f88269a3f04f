"""`ac-context ingest`, `search`, `sweep` and `switch-model`: knowledge from the command line.

`ingest` registers files and runs the ingestion steps in this process with a progress bar (or, with
`--send-event`, leaves the work to the `knowledge-ingest` function); `switch-model` runs a switchover in
this process (or sends `knowledge/model.switch.requested`). This module must never hold ingestion logic.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

import inngest
import typer

from functions.cli._common import JsonFlag, OrgOption, console, open_cli_services, print_json, progress, run
from functions.client import create_client
from functions.knowledge_ingest import EVENT_UPLOADED
from functions.knowledge_switch import EVENT_SWITCH
from knowledge._pipeline import ingest_source
from knowledge.ingest import register_upload
from knowledge.search import DEFAULT_MIN_RELEVANCE, DEFAULT_PER_SOURCE
from knowledge.search import search as search_knowledge
from knowledge.settings import begin_switch, drop_unwanted_chunks, flip_live_model, reembed_source
from knowledge.sweep import sweep_pending

__all__ = ["register"]

PlatformFlag = Annotated[bool, typer.Option("--platform", help="A platform document (shared by every organization).")]


def _scope(org: UUID | None, platform: bool) -> UUID | None:
    if (org is not None) != platform:
        return org
    raise typer.BadParameter("give --org or --platform, exactly one")


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files to ingest (PDF, Markdown, HTML, text).", exists=True)],
    org: OrgOption = None,
    platform: PlatformFlag = False,
    send_event: Annotated[bool, typer.Option("--send-event", help="Send knowledge/source.uploaded instead.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Register documents and make them searchable, with a progress bar."""
    scope = _scope(org, platform)

    async def main() -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        async with open_cli_services() as svc:
            with progress() as bar:
                task = bar.add_task("ingesting", total=len(paths))
                for path in paths:
                    bar.update(task, description=f"ingesting {path.name}")
                    media = mimetypes.guess_type(path.name)[0]
                    reg = await register_upload(
                        svc.db, svc.object_store, organization_id=scope, data=path.read_bytes(),
                        filename=path.name, media_type=media,
                    )  # fmt: skip
                    row: dict[str, Any] = {"file": str(path), "source_id": str(reg.source_id), "created": reg.created}
                    if send_event and reg.status == "pending":
                        data = {
                            "source_id": str(reg.source_id),
                            "organization_id": None if scope is None else str(scope),
                        }
                        await create_client().send(inngest.Event(name=EVENT_UPLOADED, data=data))
                        row["status"] = "pending (event sent)"
                    elif reg.status != "failed":
                        outcome = await ingest_source(
                            svc.db, svc.object_store, reg.source_id, embedders=svc.embedders.get
                        )
                        row["status"] = "failed" if outcome.failed_reason else "ready"
                        row["failure_reason"] = outcome.failed_reason
                        row["chunks"] = outcome.chunk_count
                    else:
                        row["status"] = "failed (retry it first)"
                    results.append(row)
                    bar.advance(task)
        return results

    results = run(main)
    if as_json:
        print_json(results)
        return
    for row in results:
        reason = f" — {row['failure_reason']}" if row.get("failure_reason") else ""
        console.print(f"{row['file']}: [bold]{row['status']}[/] {row['source_id']}{reason}")


def search(
    query: Annotated[str, typer.Argument(help="The question.")],
    org: Annotated[UUID, typer.Option("--org", help="The organization searching.")],
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 8,
    platform: Annotated[bool, typer.Option("--platform/--no-platform", help="Join platform documents.")] = True,
    min_relevance: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Drop hits neither search half finds relevant (0 keeps all).")
    ] = DEFAULT_MIN_RELEVANCE,
    per_source: Annotated[int, typer.Option(min=1, max=1000, help="The most chunks from one document.")] = (
        DEFAULT_PER_SOURCE
    ),
    as_json: JsonFlag = False,
) -> None:
    """Hybrid search over the organization's (and the platform's) ready documents."""

    async def main() -> list[dict[str, Any]]:
        async with open_cli_services() as svc:
            hits = await search_knowledge(
                svc.db, org, query, include_platform=platform, include_organization=True, limit=limit,
                embedders=svc.embedders.get, min_relevance=min_relevance, per_source=per_source,
            )  # fmt: skip
        return [{"score": h.score, "source": h.source_title, "ordinal": h.ordinal, "text": h.text} for h in hits]

    hits = run(main)
    if as_json:
        print_json(hits)
        return
    for n, hit in enumerate(hits, 1):
        console.print(f"[bold]{n}. {hit['source']}[/] #{hit['ordinal']} ({hit['score']:.4f})\n   {hit['text'][:240]}")


def sweep(as_json: JsonFlag = False) -> None:
    """Fail the knowledge sources pending for more than an hour (what the hourly function does)."""

    async def main() -> dict[str, int]:
        async with open_cli_services() as svc:
            result = await sweep_pending(svc.db)
        return {"failed": len(result.failed_sources), "failed_models": result.failed_models}

    result = run(main)
    print_json(result) if as_json else console.print(f"failed {result['failed']} stale source(s)")


def switch_model(
    model: Annotated[str, typer.Argument(help="The new embedding model id.")],
    org: OrgOption = None,
    send_event: Annotated[bool, typer.Option("--send-event", help="Let knowledge-model-switch do it.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Switch the live embedding model of an organization (or of the platform default, without --org)."""
    if send_event:
        data = {"organization_id": None if org is None else str(org), "model": model}
        ids = run(lambda: create_client().send(inngest.Event(name=EVENT_SWITCH, data=data)))
        print_json({"event_ids": ids}) if as_json else console.print(f"switch requested: {ids}")
        return

    async def main() -> dict[str, Any]:
        async with open_cli_services() as svc:
            plan = await begin_switch(svc.db, org, model, dimensions=svc.embedders.dimensions(model))
            if plan.already_live:
                return {"model": model, "flipped": False, "reason": "already live"}
            embedder = svc.embedders.get(model)
            with progress() as bar:
                task = bar.add_task(f"re-embedding under {model}", total=len(plan.source_ids))
                for source_id in plan.source_ids:
                    await reembed_source(svc.db, svc.object_store, source_id, embedder)
                    bar.advance(task)
            flipped = await flip_live_model(svc.db, org, model, drop_old=False)
            dropped = await drop_unwanted_chunks(svc.db, flipped.from_model)
        return {"model": model, "flipped": True, "from_model": flipped.from_model, "dropped_chunks": dropped}

    result = run(main)
    print_json(result) if as_json else console.print(result)


def register(app: typer.Typer) -> None:
    """Add the knowledge commands to the CLI."""
    app.command()(ingest)
    app.command()(search)
    app.command()(sweep)
    app.command("switch-model")(switch_model)
