"""A caller's acts on one knowledge source: retry it, run its ingestion here, delete it.

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
from functions.actions.scope import Caller, forbidden
from functions.errors import SourceNotFailedError
from knowledge.ingestion.core import IngestOutcome, ingest_source
from knowledge.ingestion.delete import delete_source
from knowledge.ingestion.sweep import RetriedSource, retry_source
from state.db import Connection
from state.receipts import Receipt

if TYPE_CHECKING:
    from functions._outbox import Delivery

__all__ = ["Deliver", "Retried", "delete", "ingest_now", "retry"]

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


def _in_scope(caller: Caller, organization_id: UUID | None) -> None:
    if not caller.operator and organization_id != caller.organization_id:
        raise forbidden()


async def retry(
    services: Services, caller: Caller, source_id: UUID, *, organization_id: UUID | None, deliver: Deliver | None
) -> Retried:
    """Reset a failed source of the scope `organization_id` (None: the platform) to pending.

    With `deliver`, its retry event is written in the reset's transaction and delivered; without, nothing is
    announced (the caller runs the ingestion itself, `ingest_now`). 409 `source_not_failed` otherwise.
    """
    _in_scope(caller, organization_id)
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
