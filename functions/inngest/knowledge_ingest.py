"""`knowledge-ingest`: make an uploaded (or retried) knowledge source searchable, one durable step at a time.

Triggers: `knowledge/source.uploaded`, `knowledge/source.retry.requested` and
`knowledge/source.sync.requested` (a new version of a URI, which replaces the live one in the transaction
that makes it ready), data `{source_id, organization_id}`. Steps: `plan` (the models the source still
needs, and which of them embed on this machine), then per model either one `ingest <model>` step (a local
model: the bulk core, with a large PDF's pages over the process pool and the chunks written with their
vectors in one COPY) or the resumable chain `extract-and-chunk`, one `embed` step per batch, and
`mark-ready` (a provider's model, whose batches cost quota). Each step returns only ids and counts; the
text and the vectors stay in Postgres.

One run at a time per source (a concurrency key), a limit per organization, retries for transient faults.
Bad input (an encrypted, empty, malformed or too large document, an unknown model) raises
`NonRetriableError` after marking the source failed with its reason at once. When the retries run out,
the `on_failure` handler marks the source failed with the last error. A rerun of a finished run from the
dashboard is harmless: a ready source has no model left to build, and a failed source is left for the
retry endpoint, which resets it to pending first.

This function must never hold ingestion logic: it sequences the core's steps.
"""

from __future__ import annotations

from typing import Any

import inngest

from functions._services import ServiceSlot
from functions.events import EVENT_RETRY, EVENT_SYNC, EVENT_UPLOADED
from functions.inngest._steps import build_model_in_one_step, build_model_steps, embeds_locally, source_id_of
from knowledge.db_errors import SourceNotFoundError
from knowledge.ingest import mark_failed, models_to_build
from knowledge.sweep import get_source

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
        error = ctx.event.data.get("error") or {}
        source_id = source_id_of(original.get("data") if isinstance(original, dict) else None)
        message = error.get("message", "unknown error") if isinstance(error, dict) else str(error)
        services = slot.get()
        marked = await mark_failed(services.db, source_id, f"ingestion failed after its retries: {message}")
        if marked.source_failed:
            services.metrics.ingestion_outcomes.labels(outcome="failed_after_retries").inc()
        return {"source_id": str(source_id), "failed": marked.source_failed}

    @client.create_function(
        fn_id=FUNCTION_ID,
        name="Knowledge: ingest a source",
        trigger=[
            inngest.TriggerEvent(event=EVENT_UPLOADED),
            inngest.TriggerEvent(event=EVENT_RETRY),
            inngest.TriggerEvent(event=EVENT_SYNC),
        ],
        concurrency=[
            inngest.Concurrency(key="event.data.source_id", limit=1),
            inngest.Concurrency(key="event.data.organization_id", limit=CONCURRENCY_PER_ORGANIZATION),
        ],
        retries=RETRIES,
        on_failure=on_failure,
    )
    async def knowledge_ingest(ctx: inngest.Context) -> dict[str, Any]:
        source_id = source_id_of(ctx.event.data)

        async def plan() -> dict[str, Any]:
            services = slot.get()
            try:
                source = await get_source(services.db, source_id)
            except SourceNotFoundError as exc:
                raise inngest.NonRetriableError(f"no knowledge source {source_id}") from exc
            if source.status == "failed":
                return {"status": "failed", "models": []}
            models = list(await models_to_build(services.db, source_id))
            # Decided here, so every replay of the run takes the same steps.
            one_step = [m for m in models if embeds_locally(services, m)]
            return {"status": source.status, "models": models, "one_step": one_step}

        planned = await ctx.step.run("plan", plan)
        if planned["status"] == "failed":
            return {"source_id": str(source_id), "skipped": "the source is failed; retry it to ingest again"}
        built: list[dict[str, Any]] = []
        for model in planned["models"]:
            if model in planned.get("one_step", ()):  # a run planned before this step existed has no list
                built.append(await build_model_in_one_step(ctx, slot, source_id, model))
            else:
                built.append(await build_model_steps(ctx, slot, source_id, model))
        ready = all(b["ready"] for b in built if not b.get("not_wanted"))  # a cancelled switch's model is no loss
        if built and ready:
            slot.get().metrics.ingestion_outcomes.labels(outcome="ready").inc()
        return {"source_id": str(source_id), "models": built, "ready": ready}

    return knowledge_ingest
