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

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from memory.errors import MemoryNotFoundError
from memory.models import AgentMemory, attribute_of, parse_stored_refs
from memory.repository import QUERIES
from state.db import Database
from state.errors import translated_db_errors
from state.paging import (
    InvalidListFilterError,
    Page,
    SortKey,
    keyset_sql,
    order_of,
    page_both,
    page_size,
    read_cursor,
)

__all__ = [
    "MEMORY_SORTS",
    "ChainRevision",
    "MemoryChain",
    "MemoryRow",
    "memory_chain",
    "page_memories",
    "people_matching",
    "subject_filter",
]


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


MEMORY_SORTS: dict[str, SortKey] = {
    "written": SortKey("created_at", datetime, descending=True),  # memories_live_recent_idx
    "subject": SortKey("subject_key", str),  # memories_live_subject_idx (migration 0118)
}
"""The columns the memories list sorts by, each through an index; `written` newest first is the default."""

_FILTERS = """
 WHERE organization_id = $1::uuid
   AND {people}
   AND {definition}
   AND {subject}"""
_PAGE_SQL = (
    """
SELECT id, organization_id, definition_id, scope, user_id, subject_key, text, subject_refs, proposed_by_run_id,
       supersedes_id, created_at, expires_at
  FROM agent.live_memories"""
    + _FILTERS
    + """
   AND {keyset}
 ORDER BY {order}
 LIMIT $5"""
)
_COUNT_SQL = "SELECT count(*) FROM agent.live_memories" + _FILTERS


def _filters(users: list[UUID] | None, definition_id: UUID | None, refs: str | None) -> dict[str, str]:
    """Each filter's condition, or a typed no-op for one not given.

    One statement per shape of filters, so a generic plan never keeps an `$n IS NULL OR ...` that hides an
    index (the subject's GIN index above all).
    """
    return {
        "people": "$2::uuid[] IS NULL" if users is None else "(scope = 'user' AND user_id = ANY ($2::uuid[]))",
        "definition": "$3::uuid IS NULL" if definition_id is None else "definition_id = $3::uuid",
        "subject": "$4::text IS NULL" if refs is None else "subject_refs @> $4::text::jsonb",
    }


def subject_filter(subject: str | None) -> str | None:
    """The jsonb containment a subject filter `kind:id` reads (`[{"kind": ..., "id": ...}]`), or None.

    `InvalidListFilterError` (`invalid_filter`) for text that is not `kind:id`.
    """
    text = (subject or "").strip()
    if not text:
        return None
    kind, sep, ident = text.partition(":")
    if not sep or not kind.strip() or not ident.strip() or "\x00" in text:
        raise InvalidListFilterError("subject is a ref kind:id, e.g. person:<uuid>")
    return json.dumps([{"kind": kind.strip(), "id": ident.strip()}])


async def people_matching(db: Database, *, organization_id: UUID, text: str) -> list[UUID]:
    """The organization's people whose email or name contains `text` (any case): the person filter's ids."""
    with translated_db_errors():
        rows = await db.fetch(QUERIES["people_matching"], organization_id, text.strip())
    return [r["id"] for r in rows]


async def page_memories(
    db: Database,
    *,
    organization_id: UUID,
    user_id: UUID | None = None,
    definition_id: UUID | None = None,
    person: str | None = None,
    subject: str | None = None,
    sort: str | None = None,
    direction: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[MemoryRow]:
    """A page of live memories in the order asked (newest first by default): the organization's, or people's.

    `user_id` narrows to one person's user-scope memories; `person` to those of every person of the
    organization whose email or name contains the text (any case); `subject` to memories about a ref
    `kind:id`; `sort` is a key of `MEMORY_SORTS`, `direction` `asc` or `desc`. A `prev_cursor` reads back.
    """
    order = order_of(MEMORY_SORTS, sort, direction, "written")
    who = (person or "").strip() or None
    refs = subject_filter(subject)
    scope = order.scope(organization_id, user_id, definition_id, *(() if who is None and refs is None else (who, refs)))
    shape = (order.key.kind, UUID)
    position, backward = read_cursor(cursor, "memories", scope, shape)
    users: list[UUID] | None = None if user_id is None else [user_id]
    if who is not None:
        found = await people_matching(db, organization_id=organization_id, text=who)
        users = [u for u in found if user_id is None or u == user_id]
    keyset, ordering = keyset_sql(order, backward=backward, value=6)
    conditions = _filters(users, definition_id, refs)
    statement = _PAGE_SQL.format(keyset=keyset if position is not None else "true", order=ordering, **conditions)
    args = (organization_id, users, definition_id, refs)
    with translated_db_errors():
        async with db.connection() as conn:
            if users is None and definition_id is None and refs is None:  # kept by triggers (migration 0117)
                total = int(await conn.fetchval(QUERIES["count_organization_live_memories"], organization_id))
            else:
                total = int(await conn.fetchval(_COUNT_SQL.format(**conditions), *args))
            rows = await conn.fetch(statement, *args, page_size(limit) + 1, *(position or ()))
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
    column = "created_at" if order.name == "written" else "subject_key"
    return page_both(
        items, limit=limit, total=total, listing="memories", scope=scope,
        position=lambda m: (getattr(m, column), m.id), cursor_given=position is not None, backward=backward,
    )  # fmt: skip


async def memory_chain(db: Database, *, organization_id: UUID, memory_id: UUID) -> MemoryChain:
    """Every revision of the chain `memory_id` is in, oldest first; `MemoryNotFoundError` outside the org."""
    with translated_db_errors():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["memory_chain"], organization_id, memory_id)
    if not rows:
        raise MemoryNotFoundError(f"no memory {memory_id} in this organization")
    return MemoryChain([ChainRevision(AgentMemory.model_validate(dict(r)), bool(r["live"])) for r in rows])
