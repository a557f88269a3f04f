"""Dev mode's in-process runner: an outbox event's work done here, through the core the Inngest functions call.

`functions._outbox` hands it a claimed row when no Inngest server answers (never in production) and keeps
the row's lease alive while it runs. This module must never decide retries or leases: it does the work
of one event and raises what fails.
"""

from __future__ import annotations

from uuid import UUID

from functions._services import ServiceSlot
from state.outbox import OutboxEntry

__all__ = ["InProcessRunner"]


class InProcessRunner:
    """Runs an outbox event's work here, through the core the Inngest functions call (dev mode, no server).

    Uploads, syncs and retries run `knowledge.ingestion.core.ingest_source` (a retry first resets the failed
    source, as the function's attempt does); batches run `ingest_batch`. Bad documents fail their source
    with its reason, as on every path; any other error leaves the row waiting for its backoff.
    """

    def __init__(self, slot: ServiceSlot) -> None:
        self.slot = slot

    async def run(self, entry: OutboxEntry) -> None:
        """Do the work `entry` asks for."""
        from functions.events import EVENT_BATCH, EVENT_RETRY, EVENT_SYNC, EVENT_UPLOADED
        from knowledge.ingestion.core import Ingestion, ingest_batch, ingest_source
        from knowledge.ingestion.sweep import retry_source

        services = self.slot.get()
        kit = Ingestion.configured(
            services.db, services.object_store, embedders=services.embedders.get, settings=services.settings
        )
        data = dict(entry.data)
        if entry.name in (EVENT_UPLOADED, EVENT_SYNC, EVENT_RETRY):
            source_id = UUID(str(data["source_id"]))
            if entry.name == EVENT_RETRY:
                await retry_source(services.db, source_id, organization_id=entry.organization_id)
            await ingest_source(kit, source_id)
        elif entry.name == EVENT_BATCH:
            await ingest_batch(kit, [UUID(str(s)) for s in data["source_ids"]])
        else:
            raise ValueError(f"no in-process handler for the event {entry.name!r}")
