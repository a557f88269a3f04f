"""A source's ingestion attempts: when each started and finished, what started it, how it ended, and why.

The rows are written by the triggers of migrations/0120 on every status change of a source (or of a ready
source's model row), so every ingestion path records them without a line of its own; `say_cause` lets a
writer name what its row alone cannot tell (`batch` when registering many, `sweep` when failing stuck ones),
inside its transaction. `source_attempts` reads the latest attempts of a source the caller's scope holds
(`source_in_scope`'s rule: another scope's source is `SourceNotFoundError`, as an unknown one).

This module must never write an attempt itself: the triggers do.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from knowledge._sql import QUERIES, translated
from knowledge.ingestion.source_pages import source_in_scope
from state.db import Connection, Database

__all__ = ["ATTEMPTS_KEPT", "Attempt", "Said", "say_cause", "source_attempts"]

ATTEMPTS_KEPT = 100
"""The attempts a source keeps (its latest; migrations/0120 deletes older ones)."""
Said = Literal["batch", "sweep"]
"""What a writer tells the triggers."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One ingestion attempt of a source."""

    id: int
    """Its order among every attempt (larger: later)."""
    source_id: UUID
    """The source."""
    embedding_model: str | None
    """None: the whole source; a model: a ready source built under one more model (a model switch)."""
    cause: str
    """What started it: `upload`, `batch`, `resync`, `retry` or `model_switch`."""
    started_at: datetime
    """When it started (the source, or its model row, became pending)."""
    finished_at: datetime | None
    """When it finished; None while it runs."""
    outcome: str | None
    """`ready` or `failed`; None while it runs."""
    ended_by: str | None
    """`ingestion`, or `sweep` when the hourly sweep failed it stuck; None while it runs."""
    reason: str | None
    """Why it failed; None unless failed."""

    def as_json(self) -> dict[str, Any]:
        """The attempt as the API answers it."""
        return {
            "id": self.id, "embedding_model": self.embedding_model, "cause": self.cause,
            "started_at": self.started_at.isoformat(),
            "finished_at": None if self.finished_at is None else self.finished_at.isoformat(),
            "outcome": self.outcome, "ended_by": self.ended_by, "reason": self.reason,
        }  # fmt: skip


async def say_cause(conn: Connection, said: Said) -> None:
    """Name this transaction's attempts for the triggers (`batch`, `sweep`); it ends with the transaction."""
    await conn.execute(QUERIES["say_attempt_cause"], said)


async def source_attempts(
    db: Database, source_id: UUID, *, organization_id: UUID | None, operator: bool = False, limit: int = ATTEMPTS_KEPT
) -> list[Attempt]:
    """The latest attempts of a source of the caller's scope, newest first."""
    await source_in_scope(db, source_id, organization_id=organization_id, operator=operator)
    with translated():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["source_attempts"], source_id, max(1, min(limit, ATTEMPTS_KEPT)))
    return [
        Attempt(r["id"], r["source_id"], r["embedding_model"], r["cause"], r["started_at"], r["finished_at"],
                r["outcome"], r["ended_by"], r["reason"])
        for r in rows
    ]  # fmt: skip
