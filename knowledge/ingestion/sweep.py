"""The pending sweep, the retry, and the admin's view of knowledge sources.

A source stuck in pending is invisible for ever unless something owns it: an ingestion job that died
leaves a document the admin believes is searchable and never sees in a result. The hourly sweep fails
every source pending for more than an hour with a reason the admin can read, and every readiness row of a
re-embed that stalled the same way; a retry resets the source to pending so ingestion runs again. This
module must never delete a source or a chunk, and never mark anything ready.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final
from uuid import UUID

import asyncpg

from knowledge._sql import QUERIES, translated
from knowledge.db_errors import SourceNotFoundError
from state.db import Database

__all__ = [
    "PENDING_LIMIT",
    "ModelReadiness",
    "RetriedSource",
    "SourceView",
    "SweepResult",
    "count_sources",
    "get_source",
    "list_sources",
    "model_readiness",
    "overdue_source_counts",
    "retry_source",
    "sweep_pending",
    "undo_retry",
]

PENDING_LIMIT: Final = timedelta(hours=1)
"""How long a source may stay pending before the sweep fails it."""


@dataclass(frozen=True, slots=True)
class SweepResult:
    """What one sweep failed."""

    failed_sources: tuple[UUID, ...]
    """Sources failed because they stayed pending too long."""
    failed_models: int
    """Readiness rows (source, model) failed for the same reason."""


@dataclass(frozen=True, slots=True)
class RetriedSource:
    """A source after a retry."""

    source_id: UUID
    """The source."""
    reset: bool
    """True when it was failed and is pending again."""
    status: str
    """Its status now."""
    models: tuple[str, ...]
    """The models ingestion has to build now."""
    attempts: int = 0
    """The source's attempt count after the retry."""
    previous_reason: str | None = None
    """Why it had failed, when it was reset (what `undo_retry` puts back)."""
    previous_models: tuple[tuple[str, str | None], ...] = ()
    """The readiness rows the retry reset, each with the reason it had failed with."""


@dataclass(frozen=True, slots=True)
class SourceView:
    """A knowledge source as the connections page shows it to an admin."""

    id: UUID
    """The source."""
    organization_id: UUID | None
    """Its organization, None for a platform document."""
    kind: str
    """upload or uri."""
    title: str
    """Its title."""
    uri: str | None
    """Its URI, for a URI-backed source."""
    status: str
    """pending, ready or failed."""
    failure_reason: str | None
    """Why it failed, in words an admin can act on."""
    attempts: int
    """How many times ingestion was started (1 + retries)."""
    pending_since: datetime | None
    """When the current attempt started, while pending."""
    updated_at: datetime
    """The last change."""
    owner: str | None = None
    """Who answers for the document, or None."""
    review_by: date | None = None
    """When it must be reviewed, or None."""
    overdue: bool = False
    """Its review date is before today in UTC (computed by the database, migrations/0087)."""

    def identity_json(self) -> dict[str, Any]:
        """What every interface shows of the source, as JSON: identity, status, why, attempts, owner, review date."""
        return {
            "id": str(self.id),
            "organization_id": None if self.organization_id is None else str(self.organization_id),
            "kind": self.kind,
            "title": self.title,
            "uri": self.uri,
            "status": self.status,
            "failure_reason": self.failure_reason,
            "attempts": self.attempts,
            "owner": self.owner,
            "review_by": None if self.review_by is None else self.review_by.isoformat(),
            "overdue": self.overdue,
        }


@dataclass(frozen=True, slots=True)
class ModelReadiness:
    """A source under one embedding model: its status and how far its chunks are embedded."""

    source_id: UUID
    """The source."""
    model: str
    """The embedding model."""
    status: str
    """pending, ready or failed."""
    chunk_count: int | None
    """Chunks it has under this model, None until they are written."""
    embedded_count: int
    """Chunks embedded so far."""
    failure_reason: str | None
    """Why it failed under this model."""
    pending_since: datetime | None
    """When the current attempt started, while pending."""


def _words(limit: timedelta) -> str:
    """`1 hour`, `90 minutes`, `30 seconds`: the age limit as an admin reads it."""
    seconds = int(limit.total_seconds())
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds % size == 0 and seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"


async def sweep_pending(
    db: Database, *, older_than: timedelta = PENDING_LIMIT, now: datetime | None = None
) -> SweepResult:
    """Fail every source (and readiness row) pending for longer than `older_than`, with the reason."""
    if older_than <= timedelta(0):
        raise ValueError("older_than must be positive")
    cutoff = (now or datetime.now(UTC)) - older_than
    words = _words(older_than)
    with translated():
        async with db.connection() as conn, conn.transaction():
            sources = await conn.fetch(QUERIES["sweep_pending_sources"], cutoff, words)
            models = await conn.fetch(QUERIES["sweep_pending_models"], cutoff, words)
    return SweepResult(tuple(r["id"] for r in sources), len(models))


async def retry_source(db: Database, source_id: UUID, *, organization_id: UUID | None) -> RetriedSource:
    """Reset a failed source of this scope (and its failed readiness rows) to pending; return what to build."""
    with translated():
        async with db.connection() as conn, conn.transaction():
            row = await conn.fetchrow(QUERIES["retry_source"], source_id, organization_id)
            if row is None:
                raise SourceNotFoundError(f"no knowledge source {source_id} in this scope")
            status = "pending" if row["reset"] else row["status"]
            reset_models = await conn.fetch(QUERIES["retry_source_models"], source_id)
            await conn.execute(QUERIES["ensure_wanted_models"], source_id)
            models = await conn.fetch(QUERIES["models_to_build"], source_id)
    return RetriedSource(
        source_id, row["reset"], status, tuple(r["embedding_model"] for r in models), attempts=row["attempts"],
        previous_reason=row["previous_reason"],
        previous_models=tuple((r["embedding_model"], r["previous_reason"]) for r in reset_models),
    )  # fmt: skip


async def undo_retry(db: Database, retried: RetriedSource) -> bool:
    """Put a retried source back to failed with its reasons, unless its new attempt has started; True if undone.

    A retry whose event could not be sent calls this, so the source never sits pending with no reason.
    """
    if not retried.reset:
        return False
    with translated():
        async with db.connection() as conn, conn.transaction():
            undone = await conn.fetchrow(
                QUERIES["undo_retry_source"], retried.source_id, retried.previous_reason, retried.attempts
            )
            if undone is None:
                return False
            await conn.execute(
                QUERIES["undo_retry_source_models"], retried.source_id,
                [m for m, _ in retried.previous_models], [r for _, r in retried.previous_models],
            )  # fmt: skip
    return True


async def list_sources(
    db: Database, organization_id: UUID | None, *, limit: int = 100, overdue: bool = False, status: str | None = None
) -> list[SourceView]:
    """The sources of one scope (None: the platform), newest first; only the overdue ones, or one status, if asked."""
    with translated():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["list_sources"], organization_id, limit, overdue, status)
    return [_view(r) for r in rows]


async def count_sources(
    db: Database, organization_id: UUID | None, *, overdue: bool = False, status: str | None = None
) -> int:
    """How many sources `list_sources` answers without its limit."""
    with translated():
        async with db.connection() as conn:
            return int(await conn.fetchval(QUERIES["count_sources"], organization_id, overdue, status))


async def get_source(db: Database, source_id: UUID) -> SourceView:
    """One source by id, whatever its scope (the caller checks the scope), or `SourceNotFoundError`."""
    with translated():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["source_by_id"], source_id)
    if row is None:
        raise SourceNotFoundError(f"no knowledge source {source_id}")
    return _view(row)


async def model_readiness(db: Database, source_ids: list[UUID]) -> list[ModelReadiness]:
    """The readiness of each source under each model it is wanted under, by source then model."""
    with translated():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["source_model_readiness"], source_ids)
    return [
        ModelReadiness(
            source_id=r["source_id"],
            model=r["embedding_model"],
            status=r["status"],
            chunk_count=r["chunk_count"],
            embedded_count=r["embedded_count"],
            failure_reason=r["failure_reason"],
            pending_since=r["pending_since"],
        )
        for r in rows
    ]


async def overdue_source_counts(db: Database) -> dict[UUID | None, int]:
    """Overdue sources (review date before today in UTC) per organization, None for the platform."""
    with translated():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["overdue_source_counts"])
    return {r["organization_id"]: r["overdue"] for r in rows}


def _view(r: asyncpg.Record) -> SourceView:
    return SourceView(
        id=r["id"],
        organization_id=r["organization_id"],
        kind=r["kind"],
        title=r["title"],
        uri=r["uri"],
        status=r["status"],
        failure_reason=r["failure_reason"],
        attempts=r["attempts"],
        pending_since=r["pending_since"],
        updated_at=r["updated_at"],
        owner=r["owner"],
        review_by=r["review_by"],
        overdue=r["overdue"],
    )
