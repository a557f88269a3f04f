"""A caller's acts on knowledge sources: list them, read one (its chunks, its progress), retry, ingest here, delete.

The one retry rule: only a failed source is retried. Its reset to pending and its
`knowledge/source.retry.requested` event commit in one transaction, then the event is delivered (sent to
Inngest, queued in the outbox when Inngest cannot be reached, or run by the in-process runner in dev mode).
A pending source (its event or the hourly sweep owns it: a second run would race the first) and a ready one
answer 409 `source_not_failed`, with nothing changed. An organization key acts inside its own organization
only; a source of another scope answers 404 `knowledge_source_not_found`, as an unknown one does.

This module must never extract, chunk or embed itself: the ingestion core does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID

from functions._announce import RetryAnnouncer
from functions._services import Services
from functions.actions.scope import Caller, require_own
from functions.errors import SourceNotFailedError
from knowledge.ingestion.core import IngestOutcome, ingest_source
from knowledge.ingestion.delete import delete_source
from knowledge.ingestion.source_pages import (
    ChunkView,
    SourceProgress,
    SourceRow,
    page_chunks,
    page_sources,
    source_in_scope,
    source_progress,
)
from knowledge.ingestion.sources import SourceView
from knowledge.ingestion.sweep import RetriedSource, retry_source
from state.db import Connection, Database
from state.paging import Page
from state.receipts import Receipt

if TYPE_CHECKING:
    from functions._outbox import Delivery

__all__ = [
    "Deliver",
    "Retried",
    "chunks_page",
    "delete",
    "ingest_now",
    "progress",
    "retry",
    "source",
    "sources_page",
]

Deliver = Callable[[Sequence[UUID]], Awaitable["Delivery"]]
"""How an interface delivers outbox rows it wrote (the app's outbox, or the CLI's one-shot send)."""


@dataclass(frozen=True, slots=True)
class Retried:
    """A source a retry reset to pending."""

    source_id: UUID
    """The source."""
    status: str
    """Its status now: `pending`."""
    models: tuple[str, ...]
    """The models its ingestion builds."""
    event_ids: tuple[str, ...] = ()
    """Its retry event (the outbox row id), when one was written."""
    event_status: str | None = None
    """`sent`, `queued` or `in_process`; None when no event was written."""
    event_error: str | None = None
    """Why the send failed, when it was queued."""

    @property
    def reset(self) -> bool:
        """Always true: a retry that does not reset a failed source is refused."""
        return True


async def retry(
    services: Services, caller: Caller, source_id: UUID, *, organization_id: UUID | None, deliver: Deliver | None
) -> Retried:
    """Reset a failed source of the scope `organization_id` (None: the platform) to pending.

    With `deliver`, its retry event is written in the reset's transaction and delivered; without, nothing is
    announced (the caller runs the ingestion itself, `ingest_now`). 409 `source_not_failed` otherwise.
    """
    require_own(caller, organization_id)
    announcer = RetryAnnouncer(organization_id)

    async def reset_or_refuse(conn: Connection, retried: RetriedSource) -> None:  # inside the reset's transaction
        if not retried.reset:
            message = f"source {source_id} is {retried.status}; only a failed source is retried"
            raise SourceNotFailedError(message)  # rolls the transaction back: nothing changed
        if deliver is not None:
            await announcer(conn, retried)

    retried = await retry_source(services.db, source_id, organization_id=organization_id, announce=reset_or_refuse)
    if deliver is None:
        return Retried(source_id, retried.status, retried.models)
    delivery = await deliver(announcer.ids)
    return Retried(source_id, retried.status, retried.models, delivery.event_ids, delivery.status, delivery.error)


async def ingest_now(services: Services, source_id: UUID) -> IngestOutcome:
    """Run a pending source's ingestion here, the core sequence `knowledge-ingest` runs, its steps inline."""
    return await ingest_source(services.ingestion, source_id)


def _requested_by(caller: Caller) -> str:
    return f"api-key:{caller.key_id}" if caller.key_id else "operator"


async def delete(services: Services, caller: Caller, source_id: UUID, *, organization_id: UUID | None) -> Receipt:
    """Delete a source, every version of its URI, and answer the receipt.

    An organization key deletes its own organization's sources only; an operator any source of
    `organization_id`, or any source at all (a platform source included) when it names none.
    """
    return await delete_source(
        services.db, services.object_store, source_id,
        organization_id=organization_id if caller.operator else caller.organization_id,
        operator=caller.operator, requested_by=_requested_by(caller),
    )  # fmt: skip


async def sources_page(
    db: Database,
    caller: Caller,
    organization_id: UUID | None,
    *,
    status: str | None = None,
    overdue: bool = False,
    title: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[SourceRow]:
    """A page of one scope's sources (None: the platform's), newest first, read on a standby that has them."""
    require_own(caller, organization_id)
    return await db.on_standby(organization_id, lambda: page_sources(
        db, organization_id, status=status, overdue=overdue, title=title, cursor=cursor, limit=limit,
    ))  # fmt: skip


async def source(db: Database, caller: Caller, source_id: UUID, *, organization_id: UUID | None) -> SourceView:
    """One source of the scope (404 `knowledge_source_not_found` for another scope's, as for an unknown id)."""
    require_own(caller, organization_id)
    return await source_in_scope(db, source_id, organization_id=organization_id)


async def chunks_page(
    db: Database,
    caller: Caller,
    source_id: UUID,
    *,
    organization_id: UUID | None,
    model: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[ChunkView]:
    """A page of a source's chunks in ordinal order, with their full text, read on a standby that has them."""
    require_own(caller, organization_id)
    return await db.on_standby(organization_id, lambda: page_chunks(
        db, source_id, organization_id=organization_id, model=model, cursor=cursor, limit=limit,
    ))  # fmt: skip


async def progress(db: Database, caller: Caller, source_id: UUID, *, organization_id: UUID | None) -> SourceProgress:
    """Where a source's ingestion is: its stage and the chunks embedded of those written, per model."""
    require_own(caller, organization_id)
    return await source_progress(db, source_id, organization_id=organization_id)
