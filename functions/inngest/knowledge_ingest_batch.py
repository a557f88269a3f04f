"""`knowledge-ingest-batch`: make many registered sources of one organization searchable in one run.

Trigger: `knowledge/sources.batch.requested`, data `{organization_id, source_ids: [...]}` with at most
`MAX_BATCH_SOURCES` ids (the batch route and `ac-context ingest --send-event` split larger sets). One
durable step, `ingest`, runs bulk ingestion over the ids (`knowledge.bulk.ingest_sources`) and returns
only counts. A document that can never be read fails itself with its reason inside the step and never its
batch; a fault that may pass (the database, the object store, a provider) fails the step, which Inngest
retries, and the retry resumes (ready sources are `unchanged`, an interrupted write rolled back). When the
retries run out, `on_failure` fails the batch's still-pending sources with the last error.

The same per-organization concurrency limit as `knowledge-ingest`. This function must never hold
ingestion logic: it calls the core.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import inngest

from functions._services import ServiceSlot
from functions.events import EVENT_BATCH, MAX_BATCH_SOURCES
from functions.inngest._steps import SourceNotReadyError
from functions.inngest.knowledge_ingest import CONCURRENCY_PER_ORGANIZATION, RETRIES
from knowledge.bulk import ingest_sources
from knowledge.extract import extract_limits
from knowledge.ingest import mark_failed
from knowledge.pool import shared_pool

__all__ = ["BATCH_FUNCTION_ID", "EVENT_BATCH", "MAX_BATCH_SOURCES", "make_knowledge_ingest_batch", "source_ids_of"]

BATCH_FUNCTION_ID = "knowledge-ingest-batch"


def source_ids_of(data: object) -> list[UUID]:
    """The `source_ids` of a batch event, or a `NonRetriableError` (a bad event never becomes good)."""
    try:
        raw = data["source_ids"]  # type: ignore[index]
        if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_BATCH_SOURCES:
            raise ValueError(f"source_ids must be a list of 1 to {MAX_BATCH_SOURCES} ids")
        return [UUID(str(value)) for value in raw]
    except (KeyError, TypeError, ValueError) as exc:
        raise inngest.NonRetriableError(f"the event names no valid source_ids: {exc}") from exc


def make_knowledge_ingest_batch(client: inngest.Inngest, slot: ServiceSlot) -> inngest.Function[Any]:
    """Create the `knowledge-ingest-batch` function over the services in `slot`."""

    async def on_failure(ctx: inngest.Context) -> dict[str, Any]:
        original = ctx.event.data.get("event") or {}
        error = ctx.event.data.get("error") or {}
        ids = source_ids_of(original.get("data") if isinstance(original, dict) else None)
        message = error.get("message", "unknown error") if isinstance(error, dict) else str(error)
        services = slot.get()
        failed = 0
        for source_id in ids:
            marked = await mark_failed(services.db, source_id, f"ingestion failed after its retries: {message}")
            failed += marked.source_failed
        services.metrics.ingestion_outcomes.labels(outcome="failed_after_retries").inc(failed)
        return {"sources": len(ids), "failed": failed}

    @client.create_function(
        fn_id=BATCH_FUNCTION_ID,
        name="Knowledge: ingest a batch of sources",
        trigger=inngest.TriggerEvent(event=EVENT_BATCH),
        concurrency=[inngest.Concurrency(key="event.data.organization_id", limit=CONCURRENCY_PER_ORGANIZATION)],
        retries=RETRIES,
        on_failure=on_failure,
    )
    async def knowledge_ingest_batch(ctx: inngest.Context) -> dict[str, Any]:
        ids = source_ids_of(ctx.event.data)

        async def ingest() -> dict[str, Any]:
            services = slot.get()
            result = await ingest_sources(
                services.db, services.object_store, ids, embedders=services.embedders.get,
                pool=shared_pool(services.settings.ingest_workers),
                max_chunks=services.settings.max_chunks_per_source,
                limits=extract_limits(services.settings),
            )  # fmt: skip
            counts = {status: result.count(status) for status in ("ready", "failed", "unchanged", "pending")}
            if counts["pending"]:
                raise SourceNotReadyError(f"{counts['pending']} source(s) are not ready after the batch; retrying")
            outcomes = services.metrics.ingestion_outcomes
            outcomes.labels(outcome="ready").inc(counts["ready"])
            outcomes.labels(outcome="failed").inc(counts["failed"])
            seconds = {"extract": result.extract_s, "embed": result.embed_s, "write": result.write_s}
            return {**counts, "seconds": {stage: round(value, 3) for stage, value in seconds.items()}}

        counts = await ctx.step.run("ingest", ingest)
        return {"sources": len(ids), **counts}

    return knowledge_ingest_batch
