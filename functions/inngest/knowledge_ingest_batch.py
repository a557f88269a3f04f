"""`knowledge-ingest-batch`: make many registered sources of one organization searchable in one run.

Trigger: `knowledge/sources.batch.requested`, data `{organization_id, source_ids: [...]}` with at most
`MAX_BATCH_SOURCES` ids (the batch route and `ac-context ingest --send-event` split larger sets). One
durable step, `ingest`, runs bulk ingestion over the ids (`knowledge.ingestion.core.ingest_batch`, the core's
batch sequence) and returns only counts. A document that can never be read fails itself with its reason
inside the step and never its batch; a fault that may pass (the database, the object store, a provider)
fails the step, which Inngest retries, and the retry resumes (ready sources are `unchanged`, an
interrupted write rolled back). When the retries run out, `on_failure` fails the batch's still-pending
sources with `failed_after_retries` and the last error's code.

The same per-organization concurrency limit as `knowledge-ingest`. This function must never hold
ingestion logic: it calls the core.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import inngest

from functions._services import ServiceSlot
from functions.event_routes import event_triggers
from functions.events import EVENT_BATCH, MAX_BATCH_SOURCES
from functions.inngest._steps import RunFailedError, drive, run_error
from functions.inngest.knowledge_ingest import CONCURRENCY_PER_ORGANIZATION, RETRIES
from knowledge.ingestion.core import ingest_batch_steps
from knowledge.ingestion.failures import after_retries
from knowledge.ingestion.steps import mark_failed

__all__ = ["BATCH_FUNCTION_ID", "EVENT_BATCH", "MAX_BATCH_SOURCES", "make_knowledge_ingest_batch", "source_ids_of"]

BATCH_FUNCTION_ID = "knowledge-ingest-batch"


def source_ids_of(data: object) -> list[UUID]:
    """The `source_ids` of a batch event, or a `NonRetriableError` (a bad event never becomes good)."""
    try:
        raw = data["source_ids"]  # type: ignore[index]
        if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_BATCH_SOURCES:
            raise ValueError(f"source_ids must be a list of 1 to {MAX_BATCH_SOURCES} ids")
        return [UUID(str(value)) for value in raw]
    except (KeyError, TypeError, ValueError):
        raise RunFailedError(run_error("event_invalid")) from None


def make_knowledge_ingest_batch(client: inngest.Inngest, slot: ServiceSlot) -> inngest.Function[Any]:
    """Create the `knowledge-ingest-batch` function over the services in `slot`."""

    async def on_failure(ctx: inngest.Context) -> dict[str, Any]:
        original = ctx.event.data.get("event") or {}
        ids = source_ids_of(original.get("data") if isinstance(original, dict) else None)
        reason = after_retries(ctx.event.data.get("error"))  # a code of ours at most, never the engine's text
        services = slot.get()
        failed = 0
        for source_id in ids:
            marked = await mark_failed(services.db, source_id, reason)
            failed += marked.source_failed
        services.metrics.ingestion_outcomes.labels(outcome="failed_after_retries").inc(failed)
        return {"sources": len(ids), "failed": failed}

    @client.create_function(
        fn_id=BATCH_FUNCTION_ID,
        name="Knowledge: ingest a batch of sources",
        trigger=[inngest.TriggerEvent(event=e) for e in event_triggers(BATCH_FUNCTION_ID)],
        concurrency=[inngest.Concurrency(key="event.data.organization_id", limit=CONCURRENCY_PER_ORGANIZATION)],
        retries=RETRIES,
        on_failure=on_failure,
    )
    async def knowledge_ingest_batch(ctx: inngest.Context) -> dict[str, Any]:
        ids = source_ids_of(ctx.event.data)
        batch = await drive(ctx, ingest_batch_steps(ids, durable=True), slot, subject=f"batch of {len(ids)}")
        outcomes = slot.get().metrics.ingestion_outcomes
        outcomes.labels(outcome="ready").inc(batch.counts["ready"])
        outcomes.labels(outcome="failed").inc(batch.counts["failed"])
        return {"sources": len(ids), **batch.counts, "seconds": batch.seconds}

    return knowledge_ingest_batch
