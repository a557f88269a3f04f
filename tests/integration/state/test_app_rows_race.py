"""Removing a user or an agent definition races a memory write that names it (issue 46, item 3): the removal
locks the row first, so it waits for the write's transaction, then counts the memory that write committed and
refuses; the memories' foreign key never gets to cascade a revision away without an erasure's receipt."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from uuid import UUID

from state.agents import remove_definition, start_run
from state.db import Database
from state.users import remove_user
from tests.factories import Factory


async def _waiting_on_a_lock(db: Database) -> bool:
    async with db.connection() as conn:
        return bool(
            await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock')"
            )
        )


async def _race(
    db: Database, org: UUID, definition: UUID, user: UUID, remove: Callable[[], Awaitable[object]]
) -> tuple[object, int]:
    """Hold an uncommitted memory insert, start the removal, commit the insert once the removal waits."""
    async with db.connection() as writer:
        tx = writer.transaction()
        await tx.start()
        await writer.execute(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key,"
            " text) VALUES ($1, $2, 'user', $3, $3, $4, 'short')",
            org, definition, user, f"user:{user}:preference.tone",
        )  # fmt: skip
        removal = asyncio.ensure_future(remove())
        for _ in range(500):
            if await _waiting_on_a_lock(db) or removal.done():
                break
            await asyncio.sleep(0.01)
        assert not removal.done(), "the removal must wait for the write that names the row"
        await tx.commit()
        outcome = await removal
    async with db.connection() as conn:
        memories = int(await conn.fetchval("SELECT count(*) FROM agent.memories WHERE organization_id = $1", org))
    return outcome, memories


async def test_removing_a_user_waits_for_a_memory_write_naming_them_and_then_refuses(
    db: Database, factory: Factory
) -> None:
    org = await factory.organization()
    user, definition = await factory.user(org), await factory.definition(org)
    outcome, memories = await _race(db, org, definition, user, lambda: remove_user(db, org, user))
    assert getattr(outcome, "outcome", None) == "has_memories" and memories == 1


async def test_removing_a_definition_waits_for_a_memory_write_it_owns_and_then_refuses(
    db: Database, factory: Factory
) -> None:
    org = await factory.organization()
    user, definition = await factory.user(org), await factory.definition(org)
    outcome, memories = await _race(db, org, definition, user, lambda: remove_definition(db, org, definition))
    assert getattr(outcome, "outcome", None) == "in_use" and memories == 1


async def test_a_run_starts_only_for_a_live_agent_and_a_member_at_the_insert_itself(
    db: Database, factory: Factory
) -> None:
    """The action checks first; the insert checks again under share locks, so an archive or a removal that
    commits between the two leaves no run (and no foreign-key error, which would answer 500)."""
    org, other = await factory.organization(), await factory.organization()
    user, live = await factory.user(org), await factory.definition(org)
    archived = await factory.definition(org, status="archived")
    workflow = await factory.definition(org, definition_kind="workflow")
    stranger, theirs = await factory.user(other), await factory.definition(other)
    assert await start_run(db, org, live, user, started_by="test") is not None
    for definition, member in ((archived, user), (workflow, user), (theirs, user), (live, stranger)):
        assert await start_run(db, org, definition, member, started_by="test") is None
    gone = await factory.user(org)
    async with db.connection() as conn:
        await conn.execute("DELETE FROM public.users WHERE id = $1", gone)
    assert await start_run(db, org, live, gone, started_by="test") is None
