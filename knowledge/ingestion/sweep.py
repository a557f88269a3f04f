"""The pending sweep and the retry (the admin's view of knowledge sources is `knowledge.ingestion.sources`).

A source stuck in pending is invisible for ever unless something owns it: an ingestion job that died
leaves a document the admin believes is searchable and never sees in a result. The hourly sweep fails
every source pending for more than an hour with a reason the admin can read, and every readiness row of a
re-embed that stalled the same way; a retry resets the source to pending so ingestion runs again. This
module must never delete a source or a chunk, and never mark anything ready.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final
from uuid import UUID

from knowledge._sql import QUERIES, translated
from knowledge.errors import SourceNotFoundError
from knowledge.ingestion.attempts import say_cause
from state.db import Connection, Database

__all__ = [
    "PENDING_LIMIT",
    "RetriedSource",
    "SweepResult",
    "retry_source",
    "sweep_pending",
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
            await say_cause(conn, "sweep")  # its attempts end by the sweep (migrations/0120)
            sources = await conn.fetch(QUERIES["sweep_pending_sources"], cutoff, words)
            models = await conn.fetch(QUERIES["sweep_pending_models"], cutoff, words)
    return SweepResult(tuple(r["id"] for r in sources), len(models))


async def retry_source(
    db: Database,
    source_id: UUID,
    *,
    organization_id: UUID | None,
    announce: Callable[[Connection, RetriedSource], Awaitable[None]] | None = None,
) -> RetriedSource:
    """Reset a failed source of this scope (and its failed readiness rows) to pending; return what to build.

    `announce`, when given, runs inside the reset's transaction (an outbox row commits with the reset or not at all).
    """
    with translated():
        async with db.connection() as conn, conn.transaction():
            row = await conn.fetchrow(QUERIES["retry_source"], source_id, organization_id)
            if row is None:
                raise SourceNotFoundError(f"no knowledge source {source_id} in this scope")
            status = "pending" if row["reset"] else row["status"]
            await conn.execute(QUERIES["retry_source_models"], source_id)
            await conn.execute(QUERIES["ensure_wanted_models"], source_id)
            models = await conn.fetch(QUERIES["models_to_build"], source_id)
            retried = RetriedSource(
                source_id, row["reset"], status, tuple(r["embedding_model"] for r in models), attempts=row["attempts"],
            )  # fmt: skip
            if announce is not None:
                await announce(conn, retried)
    return retried
