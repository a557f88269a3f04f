"""Agent definitions and runs for a deployment without the platform: the owners of memory writes.

The platform owns `agent.definitions` and `agent.runs`; a memory write names a definition of kind `agent` and
one of its runs, acting for a member of the organization (`memory.service`'s invocation check, which this
module never loosens). These helpers add an organization's own agent definitions (names unique in the
organization, any case, checked under a per-organization lock), change their status, start runs of them for
a user, list and finish runs. `remove_definition` removes a definition that nothing references: memory
revisions (their foreign key would cascade and delete them with no receipt) or runs (their history would lose
its agent) keep it, and are reported instead; archiving is the way to retire it. Each write passes the
erasure guard (`state.erasure_marks`) first. This module must never delete a memory or a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from state.db import Database
from state.erasure_marks import guard_writes
from state.errors import translated_db_errors
from state.queries import load_queries

__all__ = [
    "DEFINITION_STATUSES",
    "FINAL_RUN_STATUSES",
    "MAX_AGENT_NAME",
    "Definition",
    "DefinitionRemoval",
    "Run",
    "add_definition",
    "finish_run",
    "get_definition",
    "get_run",
    "list_definitions",
    "list_runs",
    "remove_definition",
    "set_definition_status",
    "start_run",
    "user_in_organization",
]

QUERIES = load_queries(__file__)
MAX_AGENT_NAME = 200
"""The longest definition name accepted."""
DEFINITION_STATUSES = ("draft", "published", "archived")
"""A definition's statuses (the table's CHECK)."""
FINAL_RUN_STATUSES = ("succeeded", "failed", "cancelled")
"""The statuses a run ends in."""


@dataclass(frozen=True, slots=True)
class Definition:
    """One agent definition an organization may use."""

    id: UUID
    """Its id, what `--agent`, `--definition` and `definition_id` name."""
    organization_id: UUID | None
    """Its organization; None for a platform template."""
    kind: str
    """`agent`, `workflow` or `skill` (only an agent owns memory)."""
    name: str
    """Its name, unique in the organization (any case)."""
    status: str
    """`draft`, `published` or `archived`."""
    created_at: datetime
    """When it was added."""
    memories: int = 0
    """Memory revisions it owns (tombstones included)."""
    runs: int = 0
    """Its runs."""

    def as_json(self) -> dict[str, Any]:
        """The definition as JSON."""
        return {
            "id": str(self.id), "organization_id": None if self.organization_id is None else str(self.organization_id),
            "kind": self.kind, "name": self.name, "status": self.status, "created_at": self.created_at.isoformat(),
            "memories": self.memories, "runs": self.runs,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class DefinitionRemoval:
    """What `remove_definition` did."""

    outcome: Literal["removed", "not_found", "in_use"]
    """`removed`; `not_found` (not one of the organization's own); `in_use` (nothing removed)."""
    memories: int = 0
    """The memory revisions that keep it."""
    runs: int = 0
    """The runs that keep it."""


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a definition."""

    id: UUID
    """Its id, what `--run` and `run_id` name."""
    organization_id: UUID
    """Its organization."""
    definition_id: UUID | None
    """The definition it runs."""
    user_id: UUID | None
    """The person it acts for (None once that user was removed)."""
    status: str
    """`running` until finished; then `succeeded`, `failed` or `cancelled`."""
    created_at: datetime
    """When it started."""
    updated_at: datetime
    """When its status last changed."""

    def as_json(self) -> dict[str, Any]:
        """The run as JSON."""
        return {
            "id": str(self.id), "organization_id": str(self.organization_id),
            "definition_id": None if self.definition_id is None else str(self.definition_id),
            "user_id": None if self.user_id is None else str(self.user_id), "status": self.status,
            "created_at": self.created_at.isoformat(), "updated_at": self.updated_at.isoformat(),
        }  # fmt: skip


def _definition(row: Any) -> Definition:
    return Definition(
        row["id"], row["organization_id"], row["definition_kind"], row["name"], row["status"], row["created_at"],
        int(row["memories"]), int(row["runs"]),
    )  # fmt: skip


def _run(row: Any) -> Run:
    return Run(
        row["id"], row["organization_id"], row["definition_id"], row["user_id"], row["status"], row["created_at"],
        row["updated_at"],
    )  # fmt: skip


async def add_definition(db: Database, organization_id: UUID, name: str, *, status: str) -> Definition | None:
    """Add an agent definition; None when the organization has one with this name already (any case)."""
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction():
            await guard_writes(conn, organization_id)
            await conn.execute(QUERIES["lock_organization_definitions"], organization_id)
            if await conn.fetchval(QUERIES["definition_name_taken"], organization_id, name):
                return None
            row = await conn.fetchrow(QUERIES["insert_definition"], organization_id, name, status)
    assert row is not None
    await db.note_write(organization_id)
    return _definition(row)


async def list_definitions(db: Database, organization_id: UUID, *, limit: int) -> tuple[list[Definition], int]:
    """The organization's own definitions, oldest first (at most `limit`), and how many it has."""
    with translated_db_errors():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["list_definitions"], organization_id, limit)
            total = int(await conn.fetchval(QUERIES["count_definitions"], organization_id))
    return [_definition(r) for r in rows], total


async def get_definition(db: Database, organization_id: UUID, definition_id: UUID) -> Definition | None:
    """A definition the organization may use (its own or a platform template), or None."""
    with translated_db_errors():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["get_definition"], organization_id, definition_id)
    return None if row is None else _definition(row)


async def set_definition_status(
    db: Database, organization_id: UUID, definition_id: UUID, status: str
) -> Definition | None:
    """Set the status of one of the organization's own definitions; None when it has no such definition."""
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction():
            await guard_writes(conn, organization_id)
            row = await conn.fetchrow(QUERIES["set_definition_status"], organization_id, definition_id, status)
    if row is not None:
        await db.note_write(organization_id)
    return None if row is None else _definition(row)


async def remove_definition(db: Database, organization_id: UUID, definition_id: UUID) -> DefinitionRemoval:
    """Remove one of the organization's own definitions that owns no memory and no run (see the module)."""
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction():
            await guard_writes(conn, organization_id)
            # FOR UPDATE waits for an insert that references the row and holds off the next, so the counts
            # (read in the next statement, with a snapshot from after the wait) are final until the delete:
            # its cascade (memories) and SET NULL (runs) find nothing.
            if await conn.fetchval(QUERIES["lock_definition"], organization_id, definition_id) is None:
                return DefinitionRemoval("not_found")
            row = await conn.fetchrow(QUERIES["definition_references"], definition_id)
            assert row is not None
            memories, runs = int(row["memories"]), int(row["runs"])
            if memories or runs:
                return DefinitionRemoval("in_use", memories, runs)
            await conn.execute(QUERIES["delete_definition"], organization_id, definition_id)
    await db.note_write(organization_id)
    return DefinitionRemoval("removed")


async def user_in_organization(db: Database, organization_id: UUID, user_id: UUID) -> bool:
    """Whether the user is a member of the organization."""
    with translated_db_errors():
        async with db.connection() as conn:
            return bool(await conn.fetchval(QUERIES["user_in_organization"], organization_id, user_id))


async def start_run(
    db: Database, organization_id: UUID, definition_id: UUID, user_id: UUID, *, started_by: str
) -> Run | None:
    """Start a `running` run of the definition for the user, or None.

    None when, at the insert, the definition is no live agent of the organization or the user no member
    (a removal or an archive that won a race against the caller's checks).
    """
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction():
            await guard_writes(conn, organization_id, user_id=user_id)
            row = await conn.fetchrow(
                QUERIES["insert_run"], organization_id, definition_id, user_id, {"started_by": started_by}
            )
    if row is None:
        return None
    await db.note_write(organization_id)
    return _run(row)


async def list_runs(
    db: Database, organization_id: UUID, *, definition_id: UUID | None, user_id: UUID | None, limit: int
) -> list[Run]:
    """The organization's runs, newest first, of one definition and one user where named (at most `limit`)."""
    with translated_db_errors():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["list_runs"], organization_id, definition_id, user_id, limit)
    return [_run(r) for r in rows]


async def get_run(db: Database, organization_id: UUID, run_id: UUID) -> Run | None:
    """One run of the organization, or None."""
    with translated_db_errors():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["get_run"], organization_id, run_id)
    return None if row is None else _run(row)


async def finish_run(db: Database, organization_id: UUID, run_id: UUID, status: str) -> Run | None:
    """End a run with a final status; None when it has ended already or is not the organization's."""
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction():
            await guard_writes(conn, organization_id)
            row = await conn.fetchrow(QUERIES["finish_run"], organization_id, run_id, status)
    if row is not None:
        await db.note_write(organization_id)
    return None if row is None else _run(row)
