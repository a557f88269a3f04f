"""Erasing a person's memory (issue 22): whole chains of that user (and, with a subject, the organization
memories about that person) leave the database through the one audited function; nothing else does, the
function is refused to the tenant role, every chain left behind stays valid, and a repeat answers the same
receipt."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from memory.erasure import (
    INDEX_COUNT_KEYS,
    MEMORY_COUNT_KEY,
    erase_memory_batch,
    erase_organization_memories,
    erase_user,
)
from memory.errors import InvalidErasureSubjectError, UserNotFoundError
from state.db import Database
from state.errors import DatabaseError, OrganizationNotFoundError
from state.receipts import add_to_receipt, begin_receipt, finish_receipt, get_receipt
from tests.factories import Factory
from tests.integration.memory.helpers import World, chain_rows, raw_memory, world_memory

ERASE_SQL = "SELECT * FROM agent.erase_memory_chains($1, $2, $3, $4, $5)"


def revisions(counts: Mapping[str, int]) -> dict[str, int]:
    """A receipt's counts without the relevance index rows that go with the revisions (test_erasure_canary.py)."""
    return {table: n for table, n in counts.items() if table not in INDEX_COUNT_KEYS}


async def chain_problems(db: Database) -> list[dict[str, Any]]:
    """Every problem the database's own chain check finds, over every row of agent.memories."""
    async with db.connection() as conn:
        return [dict(r) for r in await conn.fetch("SELECT * FROM agent.memory_chain_problems()")]


async def chain(db: Database, world: World, length: int, *, tombstone: bool = False, **values: Any) -> list[UUID]:
    """A chain of `length` revisions (and a tombstone after them), oldest first."""
    ids: list[UUID] = []
    parent: UUID | None = None
    for n in range(length):
        parent = await world_memory(db, world, text=f"revision {n} {uuid.uuid4().hex}", supersedes=parent, **values)
        ids.append(parent)
    if tombstone:
        ids.append(await world_memory(db, world, text=None, forgotten=True, supersedes=parent, **values))
    return ids


def person(ident: UUID, label: str = "a person") -> list[dict[str, str]]:
    return [{"kind": "crm.person", "id": str(ident), "label": label}]


async def ids_of(db: Database, org: UUID) -> set[UUID]:
    return {r["id"] for r in await chain_rows(db, org)}


async def test_erasing_a_user_removes_every_revision_of_their_chains_and_nothing_else(
    db: Database, world: World, factory: Factory
) -> None:
    about = await factory.person(world.org)
    mine = await chain(db, world, 3, tombstone=True, user=world.user)
    mine += await chain(db, world, 2, user=world.user, refs=person(about), attribute="observation.met")
    other_definition = await factory.definition(world.org)
    mine += await chain(db, world, 1, user=world.user, attribute="preference.tone")
    mine.append(await raw_memory(db, org=world.org, definition=other_definition, scope="user", user=world.user))
    theirs = await chain(db, world, 2, user=world.other_user)
    shared = await chain(db, world, 2)
    about_them = await chain(db, world, 2, refs=person(about), attribute="observation.role")

    receipt = await erase_user(db, world.org, world.user, requested_by="test")

    left = await ids_of(db, world.org)
    assert left.isdisjoint(mine), "every revision of every user-scope chain of the user is gone, tombstones too"
    assert left == set(theirs + shared + about_them), "other users' and organization memories stay"
    assert receipt.kind == "user" and receipt.target_id == world.user and receipt.subject == ""
    assert receipt.status == "complete" and revisions(receipt.counts) == {MEMORY_COUNT_KEY: len(mine)}
    assert await chain_problems(db) == []


async def test_a_subject_also_erases_the_organization_memories_about_that_person_and_no_others(
    db: Database, world: World, factory: Factory
) -> None:
    target, bystander = await factory.person(world.org), await factory.person(world.org)
    mine = await chain(db, world, 2, user=world.user)
    about_target = await chain(db, world, 3, tombstone=True, refs=person(target))
    about_target += await chain(db, world, 1, refs=person(target), attribute="observation.other")
    about_bystander = await chain(db, world, 2, refs=person(bystander))
    # Another user's own memory about the target person is that user's (user scope): it stays.
    their_note = await chain(db, world, 1, user=world.other_user, refs=person(target))
    owner_keyed = await chain(db, world, 1)

    receipt = await erase_user(db, world.org, world.user, subject=f"crm.person:{target}", requested_by="test")

    left = await ids_of(db, world.org)
    assert left.isdisjoint(mine + about_target)
    assert left == set(about_bystander + their_note + owner_keyed)
    assert receipt.subject == f"crm.person:{target}"
    assert revisions(receipt.counts) == {MEMORY_COUNT_KEY: len(mine) + len(about_target)}
    assert await chain_problems(db) == []


async def test_chains_interleaved_with_other_peoples_stay_valid_after_erasure(
    db: Database, world: World, factory: Factory
) -> None:
    target = await factory.person(world.org)
    key_refs = person(target)
    # One subject key in three chains (the user's, another user's, the organization's), written in turn.
    heads: dict[str, UUID | None] = {"mine": None, "theirs": None, "org": None}
    owners = {"mine": world.user, "theirs": world.other_user, "org": None}
    for n in range(4):
        for name, user in owners.items():
            heads[name] = await world_memory(
                db, world, user=user, refs=key_refs, text=f"{name} {n}", supersedes=heads[name]
            )
    tomb = await world_memory(
        db, world, user=world.other_user, refs=key_refs, text=None, forgotten=True, supersedes=heads["theirs"]
    )
    await world_memory(db, world, user=world.other_user, refs=key_refs, text="back again", supersedes=tomb)
    before = len(await chain_rows(db, world.org))

    await erase_user(db, world.org, world.user, subject=f"crm.person:{target}", requested_by="test")

    rows = await chain_rows(db, world.org)
    assert len(rows) == before - 8 and {r["user_id"] for r in rows} == {world.other_user}
    assert await chain_problems(db) == [], "every remaining chain keeps one root, one line and one head"
    async with db.connection() as conn:
        live = await conn.fetch("SELECT text FROM agent.live_memories WHERE organization_id = $1", world.org)
    assert [r["text"] for r in live] == ["back again"]


async def test_the_chain_check_itself_finds_a_broken_chain(db: Database, world: World) -> None:
    ids = await chain(db, world, 3)
    assert await chain_problems(db) == []
    async with db.connection() as conn, conn.transaction():
        # Break a chain the one way left (a superuser turning every trigger off): remove the middle revision.
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.execute("DELETE FROM agent.memories WHERE id = $1", ids[1])
    assert [p["problem"] for p in await chain_problems(db)] == [
        "1 of 2 revisions lie off the line from the root",
        "2 heads, not one",
        "2 live revisions for 2 live heads",
    ]


async def test_a_direct_delete_of_a_revision_is_refused_even_to_the_service_role(db: Database, world: World) -> None:
    ids = await chain(db, world, 2, user=world.user)
    async with db.connection() as conn:
        for statement in ("DELETE FROM agent.memories WHERE id = $1", "DELETE FROM agent.memories WHERE id <> $1"):
            with pytest.raises(asyncpg.CheckViolationError) as caught:
                await conn.execute(statement, ids[0])
            assert caught.value.constraint_name == "memories_erase_only"
        async with conn.transaction():
            # Outside the function the flag is off again: a call earlier in the transaction lends it nothing.
            await conn.fetch(ERASE_SQL, "user", world.org, world.other_user, None, 10)
            with pytest.raises(asyncpg.CheckViolationError):
                await conn.execute("DELETE FROM agent.memories WHERE id = $1", ids[1])
    assert await ids_of(db, world.org) == set(ids)


async def test_the_tenant_role_can_neither_call_the_function_nor_forge_its_flag(db: Database, world: World) -> None:
    ids = await chain(db, world, 1, user=world.user)
    for role in ("ac_tenant", "authenticated"):
        async with db.connection() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL ROLE {role}")
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.fetch(ERASE_SQL, "user", world.org, world.user, None, 10)
    async with db.connection() as conn:
        tx = conn.transaction()
        await tx.start()
        # Even with a DELETE grant and a policy that shows the row, the forged flag is not the function's.
        await conn.execute("GRANT SELECT, DELETE ON agent.memories TO ac_tenant")
        await conn.execute("CREATE POLICY erasure_test_all ON agent.memories TO ac_tenant USING (true)")
        await conn.execute("SET LOCAL ROLE ac_tenant")
        await conn.execute("SET LOCAL agent.memory_erasure = 'on'")
        try:
            with pytest.raises(asyncpg.CheckViolationError) as caught:
                await conn.execute("DELETE FROM agent.memories WHERE id = $1", ids[0])
            assert caught.value.constraint_name == "memories_erase_only"
        finally:
            await tx.rollback()  # the grant and the policy with it
    assert await ids_of(db, world.org) == set(ids)


async def test_deleting_the_owner_cascades_whole_chains(db: Database, world: World, factory: Factory) -> None:
    mine = await chain(db, world, 3, tombstone=True, user=world.user)
    theirs = await chain(db, world, 2, user=world.other_user)
    async with db.connection() as conn:
        await conn.execute("DELETE FROM public.users WHERE id = $1", world.user)
    assert await ids_of(db, world.org) == set(theirs)
    other_definition = await factory.definition(world.org)
    await raw_memory(db, org=world.org, definition=other_definition)
    async with db.connection() as conn:
        await conn.execute("DELETE FROM agent.definitions WHERE id = $1", other_definition)
        assert await ids_of(db, world.org) == set(theirs)
        await conn.execute("DELETE FROM public.organizations WHERE id = $1", world.org)
        assert await conn.fetchval("SELECT count(*) FROM agent.memories") == 0
    assert mine and await chain_problems(db) == []


async def test_batches_are_bounded_and_take_whole_chains(db: Database, world: World) -> None:
    for _ in range(5):
        await chain(db, world, 3, user=world.user, attribute=f"observation.n{uuid.uuid4().hex[:6]}")
    async with db.connection() as conn, conn.transaction():
        first = await erase_memory_batch(conn, "user", world.org, user_id=world.user, limit=2)
    assert (first.chains, first.revisions) == (2, 6)
    assert await chain_problems(db) == []
    receipt = await erase_user(db, world.org, world.user, requested_by="test", batch_size=2)
    assert revisions(receipt.counts) == {MEMORY_COUNT_KEY: 9}
    assert await ids_of(db, world.org) == set()


async def test_the_function_refuses_a_scope_without_its_arguments(db: Database, world: World) -> None:
    calls = [
        ("user", world.org, None, None, 10),
        ("user", world.org, world.user, "crm.person:x", 10),
        ("subject", world.org, None, "crm.person", 10),
        ("subject", world.org, None, "a:b:c", 10),
        ("subject", world.org, world.user, "crm.person:x", 10),
        ("organization", world.org, world.user, None, 10),
        ("everything", world.org, None, None, 10),
        ("organization", None, None, None, 10),
        ("organization", world.org, None, None, 0),
    ]
    async with db.connection() as conn:
        for call in calls:
            with pytest.raises(asyncpg.InvalidParameterValueError):
                await conn.fetch(ERASE_SQL, *call)


async def test_a_repeat_answers_the_same_receipt_and_an_interrupted_one_resumes(
    db: Database, world: World, factory: Factory
) -> None:
    await chain(db, world, 2, user=world.user)
    first = await erase_user(db, world.org, world.user, requested_by="test")
    again = await erase_user(db, world.org, world.user, requested_by="someone else")
    assert again == first, "a complete erasure that finds nothing new answers the same receipt"

    # Something new for the user: a new erasure, a new receipt.
    await chain(db, world, 1, user=world.user)
    fresh = await erase_user(db, world.org, world.user, requested_by="test")
    assert fresh.id != first.id and revisions(fresh.counts) == {MEMORY_COUNT_KEY: 1}

    # An interrupted erasure: its receipt is running with one batch counted; the rerun finishes it.
    target = await factory.person(world.org)
    await chain(db, world, 2, user=world.user)
    await chain(db, world, 2, user=world.user, attribute="observation.second")
    await chain(db, world, 1, refs=person(target))
    subject = f"crm.person:{target}"
    async with db.connection() as conn:
        crashed = await begin_receipt(
            conn, "user", organization_id=world.org, target_id=world.user, requested_by="test", subject=subject
        )
        async with conn.transaction():
            batch = await erase_memory_batch(conn, "user", world.org, user_id=world.user, limit=1)
            await add_to_receipt(conn, crashed.id, {MEMORY_COUNT_KEY: batch.revisions})
    resumed = await erase_user(db, world.org, world.user, subject=subject, requested_by="test")
    assert resumed.id == crashed.id and resumed.resumed == 1 and resumed.status == "complete"
    assert revisions(resumed.counts) == {MEMORY_COUNT_KEY: 5}, "the counts of both runs, exactly"


async def test_unknown_organization_user_or_a_bad_subject_changes_nothing(
    db: Database, world: World, factory: Factory
) -> None:
    ids = await chain(db, world, 2, user=world.user)
    elsewhere = await factory.tenant()
    with pytest.raises(OrganizationNotFoundError):
        await erase_user(db, uuid.uuid4(), world.user, requested_by="test")
    with pytest.raises(UserNotFoundError) as caught:
        await erase_user(db, world.org, elsewhere.user, requested_by="test")
    assert caught.value.code == "user_not_found"
    with pytest.raises(UserNotFoundError):
        await erase_user(db, elsewhere.id, world.user, requested_by="test")
    for bad in (
        "crm.person",
        f"crm.company:{uuid.uuid4()}",
        "crm.person:not-a-uuid",
        f"crm.person:{uuid.uuid4()}:x",
        f"CRM.person:{uuid.uuid4()}",
        f"crm.person:{str(uuid.uuid4()).upper()}",
    ):
        with pytest.raises(InvalidErasureSubjectError) as bad_subject:
            await erase_user(db, world.org, world.user, subject=bad, requested_by="test")
        assert bad_subject.value.code == "erasure_subject_invalid" and str(bad_subject.value).startswith("subject: ")
    assert await ids_of(db, world.org) == set(ids)
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.removal_receipts") == 0


async def test_organization_memories_are_erased_into_the_callers_receipt(
    db: Database, world: World, factory: Factory
) -> None:
    await chain(db, world, 2, user=world.user)
    await chain(db, world, 3, tombstone=True)
    other = await factory.tenant()
    other_definition = await factory.definition(other.id)
    kept = await raw_memory(db, org=other.id, definition=other_definition)
    async with db.connection() as conn:
        receipt = await begin_receipt(
            conn, "organization", organization_id=world.org, target_id=world.org, requested_by="test"
        )
    await erase_organization_memories(db, world.org, receipt_id=receipt.id, batch_size=1)
    async with db.connection() as conn:
        done = await finish_receipt(conn, receipt.id)
    assert revisions(done.counts) == {MEMORY_COUNT_KEY: 6}
    assert await ids_of(db, world.org) == set()
    assert await ids_of(db, other.id) == {kept}
    assert (await get_receipt(db, receipt.id)) == done
    await chain(db, world, 1)
    with pytest.raises(DatabaseError):  # a finished receipt takes no more counts, and the batch rolls back
        await erase_organization_memories(db, world.org, receipt_id=receipt.id)
    assert len(await ids_of(db, world.org)) == 1
