"""The erasure mark: while an organization or a person is erased, the writes for it are refused, race-free.

Every write path of the layer (an upload, a URI sync, a batch, a memory write, an API key) calls
`guard_writes` as the first statement of its transaction and keeps that transaction open until its last
write (its object put included). The guard holds the organization's write lock shared to the end of the
transaction and refuses with `OrganizationErasingError` or `PersonErasingError` when a mark is set. An
erasure sets its mark with `mark_organization_erasing` or `mark_person_erasing`, which take the same lock
exclusive: the mark commits only once every write that passed the guard has ended, and every later write sees
it (migration 0095). So nothing a write does can land after the erasure's scans. This module must never
hold a mark's lock longer than the statement that sets the mark, and never store text in a mark.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from uuid import UUID

from state.db import Connection, Database
from state.errors import (
    OrganizationErasingError,
    OrganizationNotFoundError,
    PersonErasingError,
    StateError,
    translate_db_error,
)
from state.queries import load_queries

__all__ = [
    "clear_organization_mark",
    "clear_person_mark",
    "guard_writes",
    "mark_organization_erasing",
    "mark_person_erasing",
]

QUERIES = load_queries(__file__)

_REFUSALS: dict[str, type[StateError]] = {
    "organization_erasing": OrganizationErasingError,
    "organization_not_found": OrganizationNotFoundError,
    "person_erasing": PersonErasingError,
}


@contextmanager
def _translated() -> Iterator[None]:
    import asyncpg  # only here: importing this module must not load the driver

    try:
        yield
    except asyncpg.PostgresError as exc:
        refusal = _REFUSALS.get(getattr(exc, "constraint_name", None) or "")
        if refusal is not None:
            raise refusal(str(exc).splitlines()[0]) from exc
        raise translate_db_error(exc) from exc
    except OSError as exc:
        raise translate_db_error(exc) from exc


async def guard_writes(
    conn: Connection, organization_id: UUID, *, user_id: UUID | None = None, subjects: Sequence[str] = ()
) -> None:
    """Hold the organization's write lock until the transaction ends; refuse while it or a named person is erased.

    `OrganizationNotFoundError` when the organization does not exist (nothing may be stored for it).

    Call it first in the write's transaction. `user_id` and `subjects` (`<kind>:<id>`) name the people the
    write is about, for a person's erasure.
    """
    with _translated():
        await conn.execute(QUERIES["guard_organization_write"], organization_id, user_id, list(subjects))


async def mark_organization_erasing(db: Database, organization_id: UUID, *, receipt_id: UUID) -> bool:
    """Wait for the organization's writes in flight, then mark it erasing; whether it is marked (its row exists)."""
    with _translated():
        async with db.connection() as conn:
            return bool(await conn.fetchval(QUERIES["mark_organization_erasing"], organization_id, receipt_id))


async def mark_person_erasing(
    conn: Connection, organization_id: UUID, user_id: UUID, *, subject: str, receipt_id: UUID
) -> None:
    """Wait for the organization's writes in flight, then mark the person (user and subject) erasing."""
    with _translated():
        await conn.execute(QUERIES["mark_person_erasing"], organization_id, user_id, subject, receipt_id)


async def clear_organization_mark(conn: Connection, organization_id: UUID) -> None:
    """End an organization's erasure mark (run it in the transaction that completes the receipt)."""
    with _translated():
        await conn.execute(QUERIES["clear_organization_mark"], organization_id)


async def clear_person_mark(conn: Connection, receipt_id: UUID) -> None:
    """End a person's erasure mark (run it where the receipt completes)."""
    with _translated():
        await conn.execute(QUERIES["clear_person_mark"], receipt_id)
