"""Dev mode's in-process handlers: an outbox event's work done here, through the core the Inngest functions call.

`functions.outbox.delivery` hands a claimed row to `functions.event_routes.InProcessRunner` when no Inngest server
answers (never in production) and keeps the row's lease alive while it runs; the runner finds the row's
handler here through the one table of events (`functions.event_routes`). This module must never decide
retries or leases, nor import the table of events: each handler does the work of one event and raises
what fails.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from uuid import UUID

from state.outbox import OutboxEntry

if TYPE_CHECKING:
    from functions._services import Services

__all__ = [
    "InProcessHandler",
    "build_segment_brief",
    "ingest_batch_of",
    "ingest_one",
    "reembed_source",
    "retry_and_ingest",
    "switch_model",
]

InProcessHandler = Callable[["Services", OutboxEntry], Awaitable[None]]
"""Dev mode's side of an event: does its work with the open services, raises what fails."""


def _source_id(entry: OutboxEntry) -> UUID:
    return UUID(str(entry.data["source_id"]))


async def _ingest_counted(services: Services, source_id: UUID) -> None:
    """`ingest_source`, counted as `knowledge-ingest` counts it in production (`ac_context_ingestion_outcomes`).

    `ready` when every model it built is ready, `failed` when a step failed the document.
    """
    from knowledge.ingestion.core import ingest_source

    outcome = await ingest_source(services.ingestion, source_id)
    if outcome.status == "failed":
        services.metrics.ingestion_outcomes.labels(outcome="failed").inc()
    elif outcome.built and outcome.ready:
        services.metrics.ingestion_outcomes.labels(outcome="ready").inc()


async def ingest_one(services: Services, entry: OutboxEntry) -> None:
    """An upload or a sync: `knowledge.ingestion.ingest_source`, as `knowledge-ingest` runs (and counts) it."""
    await _ingest_counted(services, _source_id(entry))


async def retry_and_ingest(services: Services, entry: OutboxEntry) -> None:
    """A retry: reset the failed source (a no-op when the sender already did), then ingest it."""
    from knowledge.ingestion.sweep import retry_source

    source_id = _source_id(entry)
    await retry_source(services.db, source_id, organization_id=entry.organization_id)
    await _ingest_counted(services, source_id)


async def ingest_batch_of(services: Services, entry: OutboxEntry) -> None:
    """A batch: `knowledge.ingestion.ingest_batch` over its source ids, counted as `knowledge-ingest-batch` counts."""
    from knowledge.ingestion.core import ingest_batch

    batch = await ingest_batch(services.ingestion, [UUID(str(s)) for s in entry.data["source_ids"]])
    outcomes = services.metrics.ingestion_outcomes
    outcomes.labels(outcome="ready").inc(batch.counts["ready"])
    outcomes.labels(outcome="failed").inc(batch.counts["failed"])


async def switch_model(services: Services, entry: OutboxEntry) -> None:
    """A model switch: begin it and re-embed the scope here until it flips (what `switch-model` does inline)."""
    from functions._memory_switch import memory_fill
    from knowledge.embedding.live_model import begin_switch
    from knowledge.switchover import run_switch

    raw = entry.data.get("organization_id")
    organization_id = None if raw is None else UUID(str(raw))
    model = str(entry.data["model"])
    plan = await begin_switch(services.db, organization_id, model, embedder=services.embedders.get(model))
    if not plan.already_live:
        fill = memory_fill(services.db, organization_id, services.embedders.get)
        await run_switch(services.db, services.object_store, plan, embedders=services.embedders.get, fill=fill)


async def reembed_source(services: Services, entry: OutboxEntry) -> None:
    """One source under one model during a switch: `knowledge.ingestion.build_source_model`."""
    from knowledge.ingestion.core import build_source_model

    model = str(entry.data["model"])
    await build_source_model(services.db, services.object_store, _source_id(entry), services.embedders.get(model))


async def build_segment_brief(services: Services, entry: OutboxEntry) -> None:
    """A segment's brief, built through the same core as `context-segment-brief` (dev mode keeps no answer)."""
    from context.models import ContextBrief
    from context.segments import decide_segment
    from functions._brief_receipts import policy_name, receipt_of
    from functions._briefs import build_brief
    from functions._wire import SegmentBriefInput
    from state.brief_receipts import BriefKind

    request = SegmentBriefInput.model_validate(dict(entry.data))
    decision = decide_segment(request.segment, waited=request.waited, policy=request.policy)
    if decision.builds:
        core, _dropped = request.request.normalized(source="segment event")
        brief = await build_brief(services.builder, core, request.policy, metrics=services.metrics, route="segment")
    else:
        brief = ContextBrief.empty()
    kind: BriefKind = "build" if decision.builds else "memo_hit"
    receipt = receipt_of(
        brief, organization_id=UUID(str(request.request.subject.organization_id)), face="segment", kind=kind,
        policy=policy_name(request.policy), run_id=request.run_id, segment=request.segment,
        dedupe_key=f"{kind}:{entry.id}:{request.run_id}:{request.segment}",
    )  # fmt: skip
    try:  # a receipt is a record, never the brief: a failed write is counted, not a failed delivery
        await services.receipts.write_now(receipt)
    except Exception:
        services.receipts.count_dropped("error", 1)
