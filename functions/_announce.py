"""The outbox rows that announce ingestion work: what the HTTP routes and the CLI write, in one place.

Every sender writes these rows with `state.outbox.enqueue` in the transaction of its state change, then
hands their ids to `functions.outbox.delivery.EventOutbox.deliver`; a send that fails leaves the rows for the
service's drainer. This module must never send: it only says which rows a change writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from functions.events import EVENT_BATCH, EVENT_RETRY, EVENT_SYNC, EVENT_UPLOADED, MAX_BATCH_SOURCES
from knowledge.ingestion.sweep import RetriedSource
from state import outbox
from state.db import Connection
from state.outbox import OutboxEvent

__all__ = ["RetryAnnouncer", "batch_events", "ingest_event"]


def _scope(organization_id: UUID | None) -> str | None:
    return None if organization_id is None else str(organization_id)


def ingest_event(source_id: UUID, organization_id: UUID | None, *, sync: bool) -> OutboxEvent:
    """The event of one pending source: an upload's, or a new URI version's (`sync`)."""
    data = {"source_id": str(source_id), "organization_id": _scope(organization_id)}
    return OutboxEvent(EVENT_SYNC if sync else EVENT_UPLOADED, data, organization_id, dedupe_key=f"ingest:{source_id}")


def batch_events(source_ids: Sequence[UUID], organization_id: UUID | None) -> list[OutboxEvent]:
    """The batch events of many pending sources of one scope, at most `MAX_BATCH_SOURCES` ids each."""
    return [
        OutboxEvent(
            EVENT_BATCH,
            {
                "organization_id": _scope(organization_id),
                "source_ids": [str(s) for s in source_ids[i : i + MAX_BATCH_SOURCES]],
            },
            organization_id,
        )
        for i in range(0, len(source_ids), MAX_BATCH_SOURCES)
    ]


class RetryAnnouncer:
    """Writes a retry's event inside the transaction that resets the source (`knowledge.ingestion.sweep.retry_source`).

    A failed source that was reset gets `knowledge/source.retry.requested`, one per attempt (a dedupe key); the
    retry act (`functions.actions.knowledge.retry`) refuses any other before this runs, and a ready one never
    gets an event here either.
    """

    def __init__(self, organization_id: UUID | None) -> None:
        self.organization_id = organization_id
        self.ids: list[UUID] = []

    async def __call__(self, conn: Connection, retried: RetriedSource) -> None:
        """Enqueue the retry event of `retried` on `conn`, unless it is ready."""
        if retried.status == "ready":
            return
        data = {"source_id": str(retried.source_id), "organization_id": _scope(self.organization_id)}
        key = f"retry:{retried.source_id}:{retried.attempts}"
        self.ids.extend(
            await outbox.enqueue(conn, [OutboxEvent(EVENT_RETRY, data, self.organization_id, dedupe_key=key)])
        )
