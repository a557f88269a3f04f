"""The event outbox: events written in the transaction of the state change they announce (migration 0089).

`enqueue(conn, events)` writes rows on the caller's connection, inside its transaction, so a source that
is registered (or a retry that is asked for) and its event are committed together or not at all. The
deliverer (`functions.outbox.delivery`) claims due rows with `claim` (a lease in the holder's name), delivers them,
and records the outcome with `mark_sent` or `mark_failed`, each row on its own schedule; a long run renews
its lease with `renew`, and a starting process ends the leases of this machine's dead holders with
`release` (migration 0096). A row's id is its event's id, so a resend after a crash is deduplicated by
Inngest. This module knows no event name and no delivery: it keeps the record of what must leave, and
must never run the work an event asks for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from state.db import Connection, Database
from state.errors import translated_db_errors
from state.queries import load_queries

__all__ = [
    "Backlog",
    "DeliveredBy",
    "Lease",
    "OutboxEntry",
    "OutboxEvent",
    "backlog",
    "claim",
    "enqueue",
    "held_on",
    "mark_failed",
    "mark_sent",
    "prune_sent",
    "release",
    "renew",
    "rows",
]

QUERIES = load_queries(__file__)

DeliveredBy = Literal["inngest", "in-process", "given-up"]
"""How a row's event left: sent to Inngest, run by the in-process runner, or given up with its error."""


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """An event to write: its name, its data, the scope it is about, and an optional dedupe key."""

    name: str
    """The event name."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """The event data (ids and names, never document text)."""
    organization_id: UUID | None = None
    """The organization the event is about; None: the platform."""
    dedupe_key: str | None = None
    """While a row with this key waits, the same key gives that row back instead of a second one."""


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """A row of the outbox as a deliverer sees it."""

    id: UUID
    """The row id, which is also the Inngest event id."""
    name: str
    """The event name."""
    data: Mapping[str, Any]
    """The event data."""
    organization_id: UUID | None
    """The scope the event is about."""
    attempts: int
    """Failed deliveries so far."""
    created_at: datetime
    """When the state change wrote it."""
    last_error: str | None = None
    """Why the last delivery failed, if one did."""
    sent_at: datetime | None = None
    """When it left (None while it waits)."""
    delivered_by: DeliveredBy | None = None
    """How it left."""
    lease: Lease | None = None
    """Who holds it and until when (only from `rows`)."""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> OutboxEntry:
        """Build an entry from a row of `outbox_claim` or `outbox_rows`."""
        return cls(
            id=row["id"], name=row["name"], data=row["data"], organization_id=row["organization_id"],
            attempts=row["attempts"], created_at=row["created_at"], last_error=row["last_error"],
            sent_at=row.get("sent_at"), delivered_by=row.get("delivered_by"),
            lease=_lease(row),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Lease:
    """A row's lease as it stands: its holder, its last heartbeat and when it ends (or its backoff does)."""

    holder: str | None
    """The process holding it (`host:pid:start`), None when nobody does."""
    heartbeat_at: datetime | None
    """When the holder last claimed or renewed it."""
    until: datetime
    """When another worker may take it (the lease's end, or the backoff's after a failure)."""


def _lease(row: Mapping[str, Any]) -> Lease | None:
    if "claimed_by" not in row:
        return None
    return Lease(holder=row["claimed_by"], heartbeat_at=row["heartbeat_at"], until=row["next_attempt_at"])


@dataclass(frozen=True, slots=True)
class Backlog:
    """The waiting rows: how many, how old the oldest is, and the newest error among them."""

    waiting: int
    """Rows whose event has not left."""
    oldest_s: float
    """Age in seconds of the oldest waiting row (0 when none waits)."""
    last_error: str | None
    """The newest delivery error among the waiting rows."""
    stuck: int = 0
    """Waiting rows that have waited `stuck_after_s` or more with an error."""
    oldest_stuck_s: float = 0.0
    """Age in seconds of the oldest stuck row (0 when none is stuck)."""
    stuck_error: str | None = None
    """The newest error among the stuck rows."""
    delivered_recently: bool = False
    """Whether any event left (to Inngest or in-process) in the last `stuck_after_s` seconds."""


async def enqueue(conn: Connection, events: Sequence[OutboxEvent]) -> list[UUID]:
    """Write `events` on `conn` (inside the caller's transaction); the row id of each, in order."""
    ids: list[UUID] = []
    with translated_db_errors():
        for event in events:
            ids.append(
                await conn.fetchval(
                    QUERIES["outbox_enqueue"], event.name, dict(event.data), event.organization_id, event.dedupe_key
                )
            )
    return ids


async def claim(
    db: Database,
    *,
    limit: int,
    lease_s: float,
    ids: Sequence[UUID] | None = None,
    min_age_s: float = 0.0,
    holder: str = "unnamed",
) -> list[OutboxEntry]:
    """Claim up to `limit` due rows for `lease_s` seconds for `holder`, oldest first (`ids`, else `min_age_s` old).

    A row whose last holder never marked it (a killed process) comes back with one more attempt and why.
    """
    with translated_db_errors():
        async with db.connection() as conn:
            wanted = None if ids is None else list(ids)
            found = await conn.fetch(QUERIES["outbox_claim"], limit, lease_s, wanted, min_age_s, holder)
    return [OutboxEntry.from_row(dict(r)) for r in found]


async def renew(db: Database, row_id: UUID, *, holder: str, lease_s: float) -> bool:
    """Extend `holder`'s lease of `row_id` to `lease_s` seconds from now; False when it no longer holds it."""
    with translated_db_errors():
        return bool(await db.fetchval(QUERIES["outbox_renew"], row_id, holder, lease_s))


async def held_on(db: Database, host_prefix: str) -> list[tuple[UUID, str]]:
    """The waiting rows under a live lease whose holder starts with `host_prefix`: (row id, holder)."""
    with translated_db_errors():
        async with db.connection() as conn:
            found = await conn.fetch(QUERIES["outbox_held"], host_prefix)
    return [(r["id"], r["claimed_by"]) for r in found]


async def release(db: Database, row_id: UUID, *, holder: str) -> bool:
    """End the lease of `row_id` now if the (dead) `holder` still has it; whether it did."""
    with translated_db_errors():
        return bool(await db.fetchval(QUERIES["outbox_release"], row_id, holder))


async def mark_sent(db: Database, ids: Sequence[UUID], *, by: DeliveredBy, error: str | None = None) -> None:
    """Record that the events of `ids` left (`given-up` with the `error` that stopped them)."""
    with translated_db_errors():
        async with db.connection() as conn:
            await conn.execute(QUERIES["outbox_mark_sent"], list(ids), by, error)


async def mark_failed(db: Database, ids: Sequence[UUID], *, error: str, retry_in_s: float) -> None:
    """Record a failed delivery of `ids`: one more attempt, its error, and the next try after `retry_in_s`."""
    with translated_db_errors():
        async with db.connection() as conn:
            await conn.execute(QUERIES["outbox_mark_failed"], list(ids), error[:500], retry_in_s)


async def backlog(db: Database, *, stuck_after_s: float = 300.0) -> Backlog:
    """How many rows wait, the oldest one's age, the newest error, and the rows stuck `stuck_after_s` or more."""
    with translated_db_errors():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["outbox_backlog"], stuck_after_s)
    assert row is not None
    return Backlog(
        waiting=int(row["waiting"]), oldest_s=float(row["oldest_s"]), last_error=row["last_error"],
        stuck=int(row["stuck"]), oldest_stuck_s=float(row["oldest_stuck_s"]), stuck_error=row["stuck_error"],
        delivered_recently=bool(row["delivered_recently"]),
    )  # fmt: skip


async def rows(db: Database, ids: Sequence[UUID]) -> list[OutboxEntry]:
    """The rows of `ids` as they stand."""
    with translated_db_errors():
        async with db.connection() as conn:
            found = await conn.fetch(QUERIES["outbox_rows"], list(ids))
    return [OutboxEntry.from_row(dict(r)) for r in found]


async def prune_sent(db: Database, *, older_than_s: float) -> int:
    """Delete the rows sent more than `older_than_s` seconds ago; how many."""
    with translated_db_errors():
        return int(await db.fetchval(QUERIES["outbox_prune_sent"], older_than_s))
