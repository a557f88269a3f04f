"""The read model of knowledge sources: what an admin, the CLI and the ingestion core read of a source.

`SourceView` is a source as the connections page shows it (identity, status, why it failed, attempts, owner,
review date, whether it is overdue); `ModelReadiness` is its state under one embedding model. Every reader
(the API, the CLI, the operator console, the ingestion core checking a source still exists) reads through
these functions. This module must never write.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from uuid import UUID

import asyncpg

from knowledge._sql import QUERIES, translated
from knowledge.errors import SourceNotFoundError
from state.db import Database

__all__ = [
    "ModelReadiness",
    "SourceView",
    "get_source",
    "list_sources",
    "model_readiness",
    "overdue_source_counts",
]


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


async def list_sources(
    db: Database, organization_id: UUID | None, *, limit: int = 100, overdue: bool = False, status: str | None = None
) -> list[SourceView]:
    """The sources of one scope (None: the platform), newest first; only the overdue ones, or one status, if asked."""
    with translated():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["list_sources"], organization_id, limit, overdue, status)
    return [_view(r) for r in rows]


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
