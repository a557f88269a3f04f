"""`ac-context ingest`, `search`, `sweep` and `switch-model`: knowledge from the command line.

`ingest` registers files and runs the ingestion steps in this process with a progress bar (or, with
`--send-event`, leaves the work to the `knowledge-ingest` function); `switch-model` runs a switchover in
this process (or sends `knowledge/model.switch.requested`) after one test call shows the model can embed,
and `switch-model --status|--cancel` show or stop the running switch of a scope. This module must never
hold ingestion logic.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

import inngest
import typer

from functions.cli._common import (
    JsonFlag,
    OrgOption,
    OrgRequired,
    console,
    open_cli_services,
    plain,
    print_json,
    progress,
    run,
    safe,
)
from functions.client import create_client
from functions.knowledge_ingest import EVENT_UPLOADED
from functions.knowledge_switch import EVENT_SWITCH
from knowledge._pipeline import ingest_source
from knowledge.ingest import register_upload
from knowledge.search import search as search_knowledge
from knowledge.settings import (
    begin_switch,
    cancel_switch,
    drop_unwanted_chunks,
    flip_live_model,
    live_model,
    reembed_source,
    running_switch,
    switch_status,
)
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
    org: OrgRequired,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 8,
    platform: Annotated[bool, typer.Option("--platform/--no-platform", help="Join platform documents.")] = True,
    as_json: JsonFlag = False,
) -> None:
    """Hybrid search over the organization's (and the platform's) ready documents."""

    async def main() -> list[dict[str, Any]]:
        async with open_cli_services() as svc:
            hits = await search_knowledge(
                svc.db, org, query, include_platform=platform, include_organization=True, limit=limit,
                embedders=svc.embedders.get,
            )  # fmt: skip
        return [{"score": h.score, "source": h.source_title, "ordinal": h.ordinal, "text": h.text} for h in hits]

    hits = run(main)
    if as_json:
        print_json(hits)
        return
    for n, hit in enumerate(hits, 1):
        console.print(f"[bold]{n}. {safe(hit['source'])}[/] #{hit['ordinal']} ({hit['score']:.4f})")
        console.print(plain(f"   {hit['text'][:240]}"))


def sweep(as_json: JsonFlag = False) -> None:
    """Fail the knowledge sources pending for more than an hour (what the hourly function does)."""

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
    if send_event:
        data = {"organization_id": None if org is None else str(org), "model": model}
        ids = run(lambda: create_client().send(inngest.Event(name=EVENT_SWITCH, data=data)))
        print_json({"event_ids": ids}) if as_json else console.print(f"switch requested: {ids}")
        return

    async def main() -> dict[str, Any]:
        async with open_cli_services() as svc:
            plan = await begin_switch(svc.db, org, model, embedder=svc.embedders.get(model))
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
    if as_json:
        print_json(result)
    elif result["flipped"]:
        console.print(
            plain(f"{model} is live (was {result['from_model']}); {result['dropped_chunks']} old chunks deleted")
        )
    else:
        console.print(plain(f"{model} is already the live model; nothing to do"))


def _switch_status(org: UUID | None, *, cancel: bool, as_json: bool) -> None:
    """Show (or cancel) the running switch of a scope."""
    scope = "the platform default" if org is None else f"organization {org}"

    async def main() -> dict[str, Any]:
        async with open_cli_services() as svc:
            switch = await running_switch(svc.db, org)
            out: dict[str, Any] = {"organization_id": None if org is None else str(org), "running": switch is not None}
            if switch is not None:
                out |= {"from_model": switch.from_model, "to_model": switch.to_model}
                if cancel:
                    out["dropped_chunks"] = await cancel_switch(svc.db, org)
                    out["cancelled"] = True
                else:
                    counts = await switch_status(svc.db, org, switch.to_model)
                    out |= {"started_at": switch.started_at.isoformat(), "total": counts.total}
                    out |= {"ready": counts.ready, "pending": counts.pending, "failed": counts.failed}
                    out["missing"] = counts.missing
            elif cancel:
                out["cancelled"] = False
            out["live_model"] = (await live_model(svc.db, org)).model_id
            return out

    out = run(main)
    if as_json:
        print_json(out)
    elif not out["running"]:
        console.print(plain(f"no switch is running for {scope}; {out['live_model']} is live"))
    elif cancel:
        console.print(plain(f"cancelled the switch of {scope} to {out['to_model']}; {out['live_model']} stays live"))
    else:
        console.print(
            plain(
                f"switch of {scope}: {out['from_model']} -> {out['to_model']} since {out['started_at']}; "
                f"{out['ready']}/{out['total']} ready, {out['pending']} pending, {out['failed']} failed, "
                f"{out['missing']} missing"
            )
        )


def register(app: typer.Typer) -> None:
    """Add the knowledge commands to the CLI."""
    app.command()(ingest)
    app.command()(search)
    app.command()(sweep)
    app.command("switch-model")(switch_model)
