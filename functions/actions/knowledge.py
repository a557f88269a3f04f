"""A caller's acts on knowledge sources: register, list, read one (chunks, progress), retry, ingest here, delete.

Registering a document (an upload's bytes, or a synced URI's content) or a batch of them writes each pending
source's ingestion event to the outbox in the transaction that registers it, then delivers the events.

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
from datetime import date
from typing import TYPE_CHECKING
from uuid import UUID

from functions._announce import RetryAnnouncer, batch_events, ingest_event
from functions._services import Services
from functions.actions.scope import Caller, require_operator, require_own
from functions.errors import SourceNotFailedError
from knowledge.errors import SourceNotFoundError
from knowledge.ingestion.attempts import Attempt, source_attempts
from knowledge.ingestion.core import IngestOutcome, ingest_source
from knowledge.ingestion.delete import delete_source
from knowledge.ingestion.registration import (
    Document,
    RegisteredSource,
    register_many,
    register_upload,
    register_uri,
)
from knowledge.ingestion.source_pages import (
    ChunkView,
    SourceProgress,
    SourceRow,
    page_chunks,
    page_sources,
    source_in_scope,
    source_progress,
)
from knowledge.ingestion.sources import ModelReadiness, SourceView, get_source, model_readiness
from knowledge.ingestion.sweep import RetriedSource, retry_source
from state import outbox
from state.db import Connection, Database
from state.paging import Page
from state.receipts import Receipt

if TYPE_CHECKING:
    from functions.outbox.delivery import Delivery

__all__ = [
    "Deliver",
    "Registered",
    "RegisteredBatch",
    "Retried",
    "SourceDetail",
    "attempts",
    "chunks_page",
    "delete",
    "ingest_now",
    "progress",
    "register_batch",
    "register_document",
    "retry",
    "source",
    "source_detail",
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


async def delete(
    services: Services,
    caller: Caller,
    source_id: UUID,
    *,
    organization_id: UUID | None,
    allow_platform: bool | None = None,
    requested_by: str | None = None,
) -> Receipt:
    """Delete a source, every version of its URI, and answer the receipt.

    An organization key deletes its own organization's sources only; an operator any source of
    `organization_id`, or any source at all when it names none; a platform source only with `allow_platform`
    (an operator's by default; the command line asks for `--platform`). `requested_by` overrides who the
    receipt records (the caller's key, or `operator`).
    """
    return await delete_source(
        services.db, services.object_store, source_id,
        organization_id=organization_id if caller.operator else caller.organization_id,
        operator=caller.operator if allow_platform is None else caller.operator and allow_platform,
        requested_by=requested_by or _requested_by(caller),
    )  # fmt: skip


async def sources_page(
    db: Database,
    caller: Caller,
    organization_id: UUID | None,
    *,
    status: str | None = None,
    overdue: bool = False,
    title: str | None = None,
    sort: str | None = None,
    direction: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[SourceRow]:
    """A page of one scope's sources (None: the platform's), newest first unless sorted, read on a standby."""
    require_own(caller, organization_id)
    return await db.on_standby(organization_id, lambda: page_sources(
        db, organization_id, status=status, overdue=overdue, title=title, sort=sort, direction=direction,
        cursor=cursor, limit=limit,
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


async def attempts(db: Database, caller: Caller, source_id: UUID, *, organization_id: UUID | None) -> list[Attempt]:
    """A source's latest ingestion attempts, newest first, read on a standby that has them (404 as `source`)."""
    require_own(caller, organization_id)
    return await db.on_standby(organization_id, lambda: source_attempts(db, source_id, organization_id=organization_id))


async def progress(db: Database, caller: Caller, source_id: UUID, *, organization_id: UUID | None) -> SourceProgress:
    """Where a source's ingestion is: its stage and the chunks embedded of those written, per model."""
    require_own(caller, organization_id)
    return await source_progress(db, source_id, organization_id=organization_id)


@dataclass(frozen=True, slots=True)
class Registered:
    """A registered document and what became of its ingestion event."""

    source: RegisteredSource
    """The source (`outcome`: created, unchanged, resync; `replaces`: the live version a resync replaces)."""
    delivery: Delivery | None
    """The delivery of its event; None when none was written (a document the scope already had ready)."""


@dataclass(frozen=True, slots=True)
class RegisteredBatch:
    """A registered batch and the delivery of its events (None when no source was pending)."""

    sources: list[RegisteredSource]
    """The sources, in input order."""
    event_written: bool
    """Whether any event was written."""
    delivery: Delivery
    """The delivery of its events."""


async def register_document(
    services: Services,
    caller: Caller,
    organization_id: UUID | None,
    data: bytes,
    *,
    deliver: Deliver,
    uri: str | None = None,
    filename: str | None = None,
    title: str | None = None,
    media_type: str | None = None,
    owner: str | None = None,
    review_by: date | None = None,
) -> Registered:
    """Register an upload (`filename`) or a synced URI (`uri`) of the scope; idempotent per organization."""
    require_own(caller, organization_id)
    ids: list[UUID] = []

    async def announce(conn: Connection, registered: RegisteredSource) -> None:  # in the registration's transaction
        event = ingest_event(registered.source_id, organization_id, sync=registered.replaces is not None)
        ids.extend(await outbox.enqueue(conn, [event]))

    if uri is not None:
        source = await register_uri(
            services.db, services.object_store, organization_id=organization_id, uri=uri, data=data, title=title,
            media_type=media_type, owner=owner, review_by=review_by, announce=announce,
        )  # fmt: skip
    else:
        source = await register_upload(
            services.db, services.object_store, organization_id=organization_id, data=data,
            filename=filename or "document", title=title, media_type=media_type, owner=owner, review_by=review_by,
            announce=announce,
        )  # fmt: skip
    delivery = await deliver(ids)
    return Registered(source, delivery if ids else None)


async def register_batch(
    services: Services, caller: Caller, organization_id: UUID | None, documents: Sequence[Document], *, deliver: Deliver
) -> RegisteredBatch:
    """Register many documents of one scope; their batch events commit with them, then are delivered."""
    require_own(caller, organization_id)
    ids: list[UUID] = []

    async def announce(conn: Connection, pending: Sequence[UUID]) -> None:  # in the transaction that made them
        ids.extend(await outbox.enqueue(conn, batch_events(pending, organization_id)))

    sources = await register_many(
        services.db, services.object_store, organization_id=organization_id, documents=documents, announce=announce
    )
    return RegisteredBatch(sources, bool(ids), await deliver(ids))


@dataclass(frozen=True, slots=True)
class SourceDetail:
    """One source and its readiness per model."""

    view: SourceView
    """The source: status, reason, attempts, owner, review date."""
    models: list[ModelReadiness]
    """Its readiness and chunk counts under each model."""


async def source_detail(
    db: Database, caller: Caller, source_id: UUID, *, organization_id: UUID | None, any_scope: bool = False
) -> SourceDetail:
    """One source of the scope with its readiness per model (404 `knowledge_source_not_found` for another's).

    With `any_scope` (an operator's, the command line's), the source is found by its id whatever its scope.
    """
    if any_scope:
        require_operator(caller)
    else:
        require_own(caller, organization_id)
    view = await get_source(db, source_id)
    if not any_scope and view.organization_id != organization_id:
        raise SourceNotFoundError(f"no knowledge source {source_id} in this scope")
    return SourceDetail(view, await model_readiness(db, [source_id]))
