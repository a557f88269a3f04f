"""`knowledge-sweep-pending`: every hour (UTC), fail the knowledge sources stuck pending for over an hour.

A source stuck pending is invisible for ever unless something owns it; the sweep of `knowledge.ingestion.sweep`
fails it with a reason the admin reads on the source list, and the admin retries it. A second step deletes
the objects of replaced versions whose delete a crash left queued (`knowledge.ingestion.object_deletes`), a
third the brief receipts past their retention (`state.brief_receipts.prune_receipts`), so no new function. A
singleton: a second sweep never runs beside the first (it is skipped). Returns how many sources it failed
and objects it deleted. This function must never retry a source itself, delete a row of a live source, or
mark anything ready.
"""

from __future__ import annotations

from typing import Any

import inngest

from functions._services import ServiceSlot
from knowledge.ingestion.object_deletes import drain_object_deletes
from knowledge.ingestion.sweep import sweep_pending
from state.brief_receipts import prune_receipts

__all__ = ["CRON", "FUNCTION_ID", "PRUNE_STEP", "make_knowledge_sweep"]

FUNCTION_ID = "knowledge-sweep-pending"
CRON = "TZ=UTC 0 * * * *"
"""At minute 0 of every hour, UTC (Inngest reads the `TZ=` prefix)."""
PRUNE_STEP = "prune-brief-receipts"
"""The step that deletes brief receipts older than `AC_CONTEXT_BRIEF_RECEIPT_DAYS` (migration 0122)."""


def make_knowledge_sweep(client: inngest.Inngest, slot: ServiceSlot) -> inngest.Function[Any]:
    """Create the hourly sweep over the services in `slot`."""

    @client.create_function(
        fn_id=FUNCTION_ID,
        name="Knowledge: fail sources stuck pending",
        trigger=inngest.TriggerCron(cron=CRON),
        singleton=inngest.Singleton(mode="skip"),
        concurrency=[inngest.Concurrency(limit=1)],
        retries=2,
    )
    async def knowledge_sweep_pending(ctx: inngest.Context) -> dict[str, Any]:
        async def sweep() -> dict[str, int]:
            services = slot.get()
            result = await sweep_pending(services.db)
            services.metrics.sweep_runs.inc()
            services.metrics.sweep_failed_sources.inc(len(result.failed_sources))
            return {"failed_sources": len(result.failed_sources), "failed_models": result.failed_models}

        async def drain() -> dict[str, int]:
            services = slot.get()
            return {"objects": len(await drain_object_deletes(services.db, services.object_store))}

        async def prune() -> dict[str, int]:
            services = slot.get()
            return {"receipts": await prune_receipts(services.db, days=services.settings.brief_receipt_days)}

        swept = await ctx.step.run("sweep", sweep)
        drained = await ctx.step.run("delete-replaced-objects", drain)
        pruned = await ctx.step.run(PRUNE_STEP, prune)
        return {
            "failed": swept["failed_sources"], "failed_models": swept["failed_models"], "objects": drained["objects"],
            "receipts": pruned["receipts"],
        }  # fmt: skip

    return knowledge_sweep_pending
