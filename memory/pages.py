"""Paged reads of durable memory for an operator: live memories, and one chain's whole history.

- `page_memories(db, organization_id=, user_id=, definition_id=, cursor=, limit=)`: a `Page[MemoryRow]` of
  live memories, newest first (the order the `memory` source reads): every live memory of the
  organization (both scopes), or with `user_id` that person's user-scope memories only; `definition_id`
  narrows to one agent definition. Live means what `agent.live_memories` holds: not forgotten, not
  superseded, not expired.
- `memory_chain(db, organization_id=, memory_id=)`: every revision of the chain `memory_id` belongs to,
  oldest first, its tombstones and expired revisions included (`MemoryChain`); another organization's id
  is `MemoryNotFoundError`, as an unknown one.

These reads show memory as stored, for people; the agent's read path (`memory.reads`, with its subject
guard) is not this. This module must never write memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from memory.errors import MemoryNotFoundError
from memory.models import AgentMemory, attribute_of, parse_stored_refs
from memory.repository import QUERIES
from state.db import Database
from state.errors import translated_db_errors
from state.paging import FIRST_DESC, Page, fingerprint, page_of, page_size, start

__all__ = ["ChainRevision", "MemoryChain", "MemoryRow", "memory_chain", "page_memories"]


def _refs(stored: object) -> list[dict[str, Any]]:
    return [ref.model_dump(exclude_none=True) for ref in parse_stored_refs(stored).refs]


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """One live memory as a list shows it."""

    id: UUID
    """The live revision's id."""
    definition_id: UUID
    """The agent definition that owns it."""
    scope: str
    """`user` or `organization`."""
    user_id: UUID | None
    """The person of a user memory."""
    subject_key: str
    """What it is about, with its attribute."""
    text: str
    """The memory."""
    subject_refs: list[dict[str, Any]]
    """The rows it is about (those that parse)."""
    supersedes_id: UUID | None
    """The revision it replaced, None for a chain's first."""
    created_at: datetime
    """When this revision was written."""
    expires_at: datetime | None
    """When it expires, None: kept until superseded or forgotten."""

    def as_json(self) -> dict[str, Any]:
        """The row as JSON."""
        return {
            "id": str(self.id),
            "definition_id": str(self.definition_id),
            "scope": self.scope,
            "user_id": None if self.user_id is None else str(self.user_id),
            "subject_key": self.subject_key,
            "attribute": attribute_of(self.subject_key),
            "text": self.text,
            "subject_refs": self.subject_refs,
            "supersedes_id": None if self.supersedes_id is None else str(self.supersedes_id),
            "created_at": self.created_at.isoformat(),
            "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class ChainRevision:
    """One revision of a chain, as stored."""

    revision: AgentMemory
    """The revision (a tombstone has no text and a `forgotten_at`)."""
    live: bool
    """Whether it is the chain's live revision (not forgotten, not superseded, not expired)."""

    def as_json(self) -> dict[str, Any]:
        """The revision as JSON."""
        r = self.revision
        return {
            "id": str(r.id),
            "text": r.text,
            "tombstone": r.is_tombstone,
            "live": self.live,
            "supersedes_id": None if r.supersedes_id is None else str(r.supersedes_id),
            "proposed_by_run_id": None if r.proposed_by_run_id is None else str(r.proposed_by_run_id),
            "subject_refs": _refs(r.subject_refs),
            "created_at": r.created_at.isoformat(),
            "forgotten_at": None if r.forgotten_at is None else r.forgotten_at.isoformat(),
            "expires_at": None if r.expires_at is None else r.expires_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class MemoryChain:
    """A chain's whole history, oldest revision first."""

    revisions: list[ChainRevision]
    """Every revision, tombstones and expired ones included."""

    @property
    def live_id(self) -> UUID | None:
        """The live revision, or None when the chain is forgotten or expired."""
        return next((c.revision.id for c in self.revisions if c.live), None)

    def as_json(self) -> dict[str, Any]:
        """The chain as JSON: its identity, the live revision and every revision."""
        head = self.revisions[-1].revision
        return {
            "organization_id": str(head.organization_id),
            "definition_id": str(head.definition_id),
            "scope": head.scope,
            "user_id": None if head.user_id is None else str(head.user_id),
            "subject_key": head.subject_key,
            "attribute": head.attribute,
            "live_id": None if self.live_id is None else str(self.live_id),
            "forgotten": head.is_tombstone,
            "revisions": [c.as_json() for c in self.revisions],
        }


async def page_memories(
    db: Database,
    *,
    organization_id: UUID,
    user_id: UUID | None = None,
    definition_id: UUID | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[MemoryRow]:
    """A page of live memories, newest first: the organization's (both scopes), or one person's."""
    scope = fingerprint(organization_id, user_id, definition_id)
    after = start(cursor, "memories", scope, FIRST_DESC, (datetime, UUID))
    args = (organization_id, user_id, definition_id)
    with translated_db_errors():
        async with db.connection() as conn:
            if user_id is None and definition_id is None:  # kept by triggers (migration 0117): no count
                total = int(await conn.fetchval(QUERIES["count_organization_live_memories"], organization_id))
            else:
                total = int(await conn.fetchval(QUERIES["count_listed_memories"], *args))
            rows = await conn.fetch(QUERIES["page_live_memories"], *args, *after, page_size(limit) + 1)
    items = [
        MemoryRow(
            r["id"],
            r["definition_id"],
            r["scope"],
            r["user_id"],
            r["subject_key"],
            r["text"],
            _refs(r["subject_refs"]),
            r["supersedes_id"],
            r["created_at"],
            r["expires_at"],
        )
        for r in rows
    ]
    return page_of(
        items, limit=limit, total=total, listing="memories", scope=scope, position=lambda m: (m.created_at, m.id)
    )


async def memory_chain(db: Database, *, organization_id: UUID, memory_id: UUID) -> MemoryChain:
    """Every revision of the chain `memory_id` is in, oldest first; `MemoryNotFoundError` outside the org."""
    with translated_db_errors():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["memory_chain"], organization_id, memory_id)
    if not rows:
        raise MemoryNotFoundError(f"no memory {memory_id} in this organization")
    return MemoryChain([ChainRevision(AgentMemory.model_validate(dict(r)), bool(r["live"])) for r in rows])
