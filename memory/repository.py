"""Service-role reads and inserts of `agent.memories`, each one named statement of `memory/queries.sql`.

Every function takes a connection the caller opened on the service role, so the service decides the
transaction. Every statement filters the organization explicitly, because row-level security does not
filter the service role. An insert that loses the chain race (a second root or a second child) raises
`ChainMoved`, which the service answers by reloading the head; any other driver error is translated once.

This module must never be reachable from a model: a model writes memory through the memory tools only, and
nothing here decides whether a write is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from memory.models import AgentMemory, LiveMemory, RankedMemory, RelevanceQuery
from state.db import Connection, Database
from state.errors import translate_db_error
from state.queries import load_queries

__all__ = [
    "CHAIN_CONSTRAINTS",
    "QUERIES",
    "ChainMoved",
    "InvocationCheck",
    "count_live_memories",
    "count_run_remembers",
    "fetch_expired_heads",
    "fetch_head",
    "fetch_invocation",
    "fetch_live_memories",
    "fetch_personal_memories",
    "fetch_relevant_memories",
    "fetch_relevant_memories_exact",
    "fetch_revision",
    "insert_revision",
    "insert_tombstone",
    "lock_run_remembers",
]

QUERIES = load_queries(__file__)

CHAIN_CONSTRAINTS = frozenset({"memories_one_root_per_chain", "memories_one_child_per_revision"})
"""The two constraints two writers race on: losing one means the head moved."""


class ChainMoved(Exception):  # a signal between repository and service, never seen by a caller
    """Another writer attached to the head this writer read."""

    def __init__(self, constraint: str) -> None:
        super().__init__(constraint)
        self.constraint = constraint


@dataclass(frozen=True)
class InvocationCheck:
    """Whether the parts of an invocation belong to its organization."""

    definition_kind: str | None
    """The kind of the invoking definition, or None when the organization cannot see it."""
    run_matches: bool
    """The run belongs to the organization and the definition."""
    user_matches: bool
    """The user (if any) belongs to the organization."""


async def fetch_invocation(
    conn: Connection, organization_id: UUID, definition_id: UUID, run_id: UUID, user_id: UUID | None
) -> InvocationCheck:
    """Check that the definition, run and user of an invocation belong to its organization."""
    row = await conn.fetchrow(QUERIES["fetch_invocation"], organization_id, definition_id, run_id, user_id)
    assert row is not None  # a SELECT without FROM answers one row
    return InvocationCheck(row["definition_kind"], bool(row["run_matches"]), bool(row["user_matches"]))


async def fetch_head(
    conn: Connection,
    *,
    organization_id: UUID,
    definition_id: UUID,
    scope: str,
    scope_owner_id: UUID,
    subject_key: str,
) -> AgentMemory | None:
    """The exact current revision of one chain from `agent.memory_heads`, or None."""
    row = await conn.fetchrow(QUERIES["fetch_head"], organization_id, definition_id, scope, scope_owner_id, subject_key)
    return None if row is None else AgentMemory.from_row(row)


async def fetch_revision(conn: Connection, organization_id: UUID, memory_id: UUID) -> tuple[AgentMemory, bool] | None:
    """One revision of the organization and whether it is its chain's head, or None."""
    row = await conn.fetchrow(QUERIES["fetch_revision"], organization_id, memory_id)
    if row is None:
        return None
    data = dict(row)
    is_head = bool(data.pop("is_head"))
    return AgentMemory.model_validate(data), is_head


async def _insert(conn: Connection, name: str, *args: object) -> AgentMemory | None:
    try:
        row = await conn.fetchrow(QUERIES[name], *args)
    except asyncpg.UniqueViolationError as exc:
        if exc.constraint_name in CHAIN_CONSTRAINTS:
            raise ChainMoved(exc.constraint_name) from exc
        raise translate_db_error(exc) from exc
    except asyncpg.PostgresError as exc:
        raise translate_db_error(exc) from exc
    return None if row is None else AgentMemory.from_row(row)


async def insert_revision(
    conn: Connection,
    *,
    organization_id: UUID,
    definition_id: UUID,
    scope: str,
    user_id: UUID | None,
    scope_owner_id: UUID,
    subject_key: str,
    text: str,
    subject_refs: Sequence[dict[str, str]],
    run_id: UUID,
    supersedes_id: UUID | None,
    expires_at: datetime | None = None,
) -> AgentMemory:
    """Append one live revision after `supersedes_id` (None starts a chain); raises `ChainMoved` on a race."""
    memory = await _insert(
        conn,
        "insert_revision",
        organization_id,
        definition_id,
        scope,
        user_id,
        scope_owner_id,
        subject_key,
        text,
        [dict(ref) for ref in subject_refs],  # the pool's jsonb codec encodes it
        run_id,
        supersedes_id,
        expires_at,
    )
    assert memory is not None  # INSERT … VALUES … RETURNING answers its row
    return memory


async def insert_tombstone(
    conn: Connection, organization_id: UUID, head_id: UUID, run_id: UUID | None
) -> AgentMemory | None:
    """Append a tombstone after `head_id` (no run: the expiry sweep); None when no such revision; `ChainMoved`."""
    return await _insert(conn, "insert_tombstone", organization_id, head_id, run_id)


async def lock_run_remembers(conn: Connection, run_id: UUID) -> None:
    """Hold the run's remember lock until the transaction ends."""
    await conn.execute(QUERIES["lock_run_remembers"], run_id)


async def count_run_remembers(conn: Connection, run_id: UUID) -> int:
    """How many live revisions the run has written."""
    count: int = await conn.fetchval(QUERIES["count_run_remembers"], run_id)
    return count


async def fetch_live_memories(
    conn: Connection | Database,
    *,
    organization_id: UUID,
    definition_id: UUID | None,
    user_id: UUID | None,
    limit: int,
) -> list[LiveMemory]:
    """The `memory` source read of `agent.live_memories`, newest first (see queries.sql)."""
    rows = await conn.fetch(QUERIES["fetch_live_memories"], organization_id, definition_id, user_id, limit)
    return [LiveMemory.from_row(row) for row in rows]


async def count_live_memories(
    conn: Connection, *, organization_id: UUID, definition_id: UUID | None, user_id: UUID | None
) -> int:
    """How many rows `fetch_live_memories` answers without its limit."""
    return int(await conn.fetchval(QUERIES["count_live_memories"], organization_id, definition_id, user_id))


async def fetch_personal_memories(
    conn: Connection | Database, *, organization_id: UUID, definition_id: UUID | None, user_id: UUID, limit: int
) -> list[LiveMemory]:
    """The `personal_memory` source read: one person's preference.* memories in one definition (None: all)."""
    rows = await conn.fetch(QUERIES["fetch_personal_memories"], organization_id, definition_id, user_id, limit)
    return [LiveMemory.from_row(row) for row in rows]


async def fetch_relevant_memories(
    conn: Connection | Database,
    *,
    organization_id: UUID,
    definition_id: UUID | None,
    user_id: UUID | None,
    limit: int,
    candidates: int,
    personal: bool,
    query: RelevanceQuery,
) -> list[RankedMemory]:
    """Either source's read ranked by relevance, best first (see queries.sql, `fetch_relevant_memories`)."""
    rows = await conn.fetch(  # the pool's pgvector codec encodes the list
        QUERIES["fetch_relevant_memories"],
        organization_id, definition_id, user_id, limit, query.text, query.vector, query.model, candidates, personal,
        query.dense_weight, query.lexical_weight, query.k1, query.b, query.lexical_depth, query.walk_above,
    )  # fmt: skip
    return [RankedMemory(LiveMemory.from_row(row), row["rank"], row["score"]) for row in rows]


async def fetch_relevant_memories_exact(
    conn: Connection | Database,
    *,
    organization_id: UUID,
    definition_id: UUID | None,
    user_id: UUID | None,
    limit: int,
    candidates: int,
    personal: bool,
    query: RelevanceQuery,
) -> list[RankedMemory]:
    """The exact relevance read of migration 0101: every memory in scope scored.

    The reference the bounded read is measured and tested against (recall of its top k); no runtime path calls it.
    """
    rows = await conn.fetch(
        QUERIES["fetch_relevant_memories_exact"],
        organization_id, definition_id, user_id, limit, query.text, query.vector, query.model, candidates, personal,
        query.dense_weight, query.lexical_weight, query.k1, query.b,
    )  # fmt: skip
    return [RankedMemory(LiveMemory.from_row(row), row["rank"], row["score"]) for row in rows]


async def fetch_expired_heads(conn: Connection, *, now: datetime | None, limit: int) -> list[AgentMemory]:
    """Chain heads whose expiry passed by `now` (None: the database clock), soonest first, at most `limit`."""
    rows = await conn.fetch(QUERIES["fetch_expired_heads"], now, limit)
    return [AgentMemory.from_row(row) for row in rows]
