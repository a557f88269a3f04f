"""`knowledge-ingest`: make an uploaded (or retried) knowledge source searchable, one durable step at a time.

Triggers: `knowledge/source.uploaded`, `knowledge/source.retry.requested` and
`knowledge/source.sync.requested` (a new version of a URI, which replaces the live one in the transaction
that makes it ready), data `{source_id, organization_id}`. Steps: `plan` (the models the source still
needs, and which of them embed on this machine), then per model either one `ingest <model>` step (a local
model: the bulk core, with a large PDF's pages over the process pool and the chunks written with their
vectors in one COPY) or the resumable chain `extract-and-chunk`, one `embed` step per batch, and
`mark-ready` (a provider's model, whose batches cost quota). Each step returns only ids and counts; the
text and the vectors stay in Postgres. The sequence is `knowledge.ingestion.core.ingest_source`, the one core
every caller runs; this function drives its steps durably.

One run at a time per source (a concurrency key), a limit per organization, retries for transient faults.
Bad input (an encrypted, empty, malformed or too large document, an unknown model) raises
`RunFailedError` (its reason's code and the source id, no stack) after marking the source failed with its
reason at once. When the retries run out, the `on_failure` handler marks the source failed with
`failed_after_retries` and the last error's code, never the engine's message. A rerun of a finished run from the
dashboard is harmless: a ready source has no model left to build, and a failed source is left for the
retry endpoint, which resets it to pending first.

This function must never hold ingestion logic: it runs the core and translates its outcome.
"""

from __future__ import annotations

from typing import Any

import inngest

from functions._services import ServiceSlot
from functions.event_routes import event_triggers
from functions.events import EVENT_RETRY, EVENT_SYNC, EVENT_UPLOADED
from functions.inngest._steps import RunFailedError, drive, run_error, source_id_of
from knowledge.ingestion.core import ingest_source_steps
from knowledge.ingestion.failures import after_retries
from knowledge.ingestion.steps import mark_failed

__all__ = [
    "CONCURRENCY_PER_ORGANIZATION",
    "EVENT_RETRY",
    "EVENT_SYNC",
    "EVENT_UPLOADED",
    "FUNCTION_ID",
    "RETRIES",
    "make_knowledge_ingest",
]

FUNCTION_ID = "knowledge-ingest"
RETRIES = 4
CONCURRENCY_PER_ORGANIZATION = 4
"""Ingestions of one organization at once, so one tenant's bulk upload cannot hold every worker."""


def make_knowledge_ingest(client: inngest.Inngest, slot: ServiceSlot) -> inngest.Function[Any]:
    """Create the `knowledge-ingest` function over the services in `slot`."""

    async def on_failure(ctx: inngest.Context) -> dict[str, Any]:
        original = ctx.event.data.get("event") or {}
        source_id = source_id_of(original.get("data") if isinstance(original, dict) else None)
        services = slot.get()
        # The engine's error message came from the run: only a code of ours is taken from it, never text.
        marked = await mark_failed(services.db, source_id, after_retries(ctx.event.data.get("error")))
        if marked.source_failed:
            services.metrics.ingestion_outcomes.labels(outcome="failed_after_retries").inc()
        return {"source_id": str(source_id), "failed": marked.source_failed}

    @client.create_function(
        fn_id=FUNCTION_ID,
        name="Knowledge: ingest a source",
        trigger=[inngest.TriggerEvent(event=e) for e in event_triggers(FUNCTION_ID)],
        concurrency=[
            inngest.Concurrency(key="event.data.source_id", limit=1),
            inngest.Concurrency(key="event.data.organization_id", limit=CONCURRENCY_PER_ORGANIZATION),
        ],
        retries=RETRIES,
        on_failure=on_failure,
    )
    async def knowledge_ingest(ctx: inngest.Context) -> dict[str, Any]:
        source_id = source_id_of(ctx.event.data)
        outcome = await drive(ctx, ingest_source_steps(source_id, durable=True), slot, subject=source_id)
        if outcome.status == "deleted":  # deleted before or while it ran (knowledge.ingestion.delete): nothing to do
            return {"source_id": str(source_id), "deleted": True}
        if outcome.status == "missing":
            raise RunFailedError(run_error("source_not_found", source_id))
        if outcome.status == "skipped":
            return {"source_id": str(source_id), "skipped": "the source is failed; retry it to ingest again"}
        if outcome.built and outcome.ready:
            slot.get().metrics.ingestion_outcomes.labels(outcome="ready").inc()
        return {"source_id": str(source_id), "models": list(outcome.built), "ready": outcome.ready}

    return knowledge_ingest
