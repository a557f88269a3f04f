"""The database itself enforces the memory chain and the shape of a revision; each test names its constraint."""

from __future__ import annotations

import asyncpg
import pytest

from memory._blank import BLANK_CHARACTERS
from state.db import Database
from tests.factories import Factory
from tests.integration.memory.helpers import World, raw_memory, world_memory

COMPANY_REF = {"kind": "crm.company", "id": "8f21"}


async def _refused(constraint: str, coro: object) -> None:
    with pytest.raises(asyncpg.IntegrityConstraintViolationError) as caught:
        await coro  # type: ignore[misc]
    assert caught.value.constraint_name == constraint, f"expected {constraint}, got {caught.value}"


async def test_the_database_refuses_a_second_root_of_one_chain(db: Database, world: World) -> None:
    await world_memory(db, world)
    await _refused("memories_one_root_per_chain", world_memory(db, world))


async def test_the_database_refuses_a_second_child_of_one_revision(db: Database, world: World) -> None:
    root = await world_memory(db, world, text="v1")
    await world_memory(db, world, text="v2", supersedes=root)
    await _refused(
        "memories_one_child_per_revision",
        world_memory(db, world, text="v2 fork", supersedes=root),
    )


async def test_the_database_refuses_a_child_that_changes_the_chain_identity(
    db: Database, world: World, factory: Factory
) -> None:
    # A chain about one company: its key does not depend on the scope owner, so only the chain
    # reference can refuse a child that moves to another definition, scope, user or organization.
    about = {"refs": [COMPANY_REF], "attribute": "observation.buying_process"}
    root = await world_memory(db, world, **about)
    other_definition = await factory.definition(world.org)
    other_org = await factory.organization()
    other_org_definition = await factory.definition(other_org)
    changes: list[dict[str, object]] = [
        {"org": world.org, "definition": other_definition},
        {"org": world.org, "definition": world.definition, "scope": "user", "user": world.user},
        {"org": other_org, "definition": other_org_definition},
    ]
    for change in changes:
        await _refused("memories_supersedes_same_chain", raw_memory(db, supersedes=root, **about, **change))  # type: ignore[arg-type]
    # The key itself: another attribute is another chain, so pointing at this one is refused.
    await _refused(
        "memories_supersedes_same_chain",
        world_memory(
            db,
            world,
            refs=[COMPANY_REF],
            attribute="observation.other",
            supersedes=root,
        ),
    )


async def test_the_database_refuses_a_user_change_inside_a_user_chain(db: Database, world: World) -> None:
    about = {"refs": [COMPANY_REF], "attribute": "preference.tone", "scope": "user"}
    root = await world_memory(db, world, user=world.user, **about)
    await _refused(
        "memories_supersedes_same_chain", world_memory(db, world, user=world.other_user, supersedes=root, **about)
    )


async def test_the_database_refuses_a_tombstone_with_text(db: Database, world: World) -> None:
    root = await world_memory(db, world)
    await _refused(
        "memories_tombstone_has_no_text",
        world_memory(db, world, text="still here", forgotten=True, supersedes=root),
    )


async def test_the_database_refuses_a_live_revision_without_text(db: Database, world: World) -> None:
    for text in (None, "", " \t\u00a0\u3000"):
        await _refused("memories_live_revision_has_text", world_memory(db, world, text=text))


async def test_the_database_refuses_a_chain_that_starts_with_a_tombstone(db: Database, world: World) -> None:
    await _refused(
        "memories_tombstone_supersedes",
        world_memory(db, world, text=None, forgotten=True),
    )


async def test_the_database_refuses_a_two_element_subject_refs(db: Database, world: World) -> None:
    two = [COMPANY_REF, {"kind": "crm.person", "id": "4a09"}]
    key = "crm.company:8f21:observation.note"
    await _refused(
        "memories_subject_refs_at_most_one",
        world_memory(db, world, refs=two, key=key),
    )


@pytest.mark.parametrize(
    "ident",
    ["\t", "\u00a0", "8f:21", "", "\u2028", "\u200b"],
    ids=["tab", "no-break-space", "colon", "empty", "line-separator", "zero-width-space"],
)
async def test_the_database_refuses_an_element_whose_id_is_blank_or_holds_a_colon(
    db: Database, world: World, ident: str
) -> None:
    element = {"kind": "crm.company", "id": ident}
    key = "crm.company:x:observation.note"  # a well-formed key, so the element check alone fires
    await _refused(
        "memories_subject_ref_elements_well_formed",
        world_memory(db, world, refs=[element], key=key),
    )


async def test_a_label_is_free_text_and_may_hold_a_colon(db: Database, world: World) -> None:
    element = {**COMPANY_REF, "label": "Acme: the Chicago office"}
    await world_memory(db, world, refs=[element])


async def test_the_database_refuses_a_key_not_made_from_the_subject(db: Database, world: World) -> None:
    await _refused(
        "memories_subject_key_matches_subject",
        world_memory(db, world, key="crm.company:other:observation.note", refs=[COMPANY_REF]),
    )
    await _refused(
        "memories_subject_key_shape",
        world_memory(db, world, attribute="lifecycle_stage"),
    )


async def test_the_database_refuses_a_rewrite_of_a_revision(db: Database, world: World) -> None:
    memory = await world_memory(db, world)
    async with db.connection() as conn:
        with pytest.raises(asyncpg.CheckViolationError) as caught:
            await conn.execute("UPDATE agent.memories SET text = 'rewritten' WHERE id = $1", memory)
    assert caught.value.constraint_name == "memories_append_only"


async def test_deleting_the_proposing_run_clears_the_run_and_keeps_the_revision(
    db: Database, world: World, factory: Factory
) -> None:
    run = await factory.run(world.org, definition_id=world.definition, user_id=world.user)
    async with db.connection() as conn:
        memory = await conn.fetchval(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key, text,"
            " proposed_by_run_id) VALUES ($1, $2, 'organization', $1, $3, 'x', $4) RETURNING id",
            world.org,
            world.definition,
            f"organization:{world.org}:observation.x",
            run,
        )
        await conn.execute("DELETE FROM agent.runs WHERE id = $1", run)
        assert await conn.fetchval("SELECT proposed_by_run_id FROM agent.memories WHERE id = $1", memory) is None


@pytest.mark.parametrize("role", ["authenticated", "ac_tenant"])
@pytest.mark.parametrize("relation", ["agent.memories", "agent.memory_heads", "agent.live_memories"])
async def test_memory_is_closed_to_the_user_key_and_tenant_roles(db: Database, role: str, relation: str) -> None:
    async with db.connection() as conn, conn.transaction():
        await conn.execute(f"SET LOCAL ROLE {role}")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch(f"SELECT * FROM {relation}")
    async with db.connection() as conn, conn.transaction():
        await conn.execute(f"SET LOCAL ROLE {role}")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(
                f"INSERT INTO {relation} (organization_id, definition_id, scope, subject_key, text)"
                " VALUES (gen_random_uuid(), gen_random_uuid(), 'organization', 'a:b:observation.c', 'x')"
            )


async def test_the_database_blank_list_is_the_python_blank_list(db: Database) -> None:
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT agent.memory_blank_characters()") == BLANK_CHARACTERS
        for char in BLANK_CHARACTERS:
            assert await conn.fetchval("SELECT agent.is_blank($1)", char * 3), repr(char)
        assert not await conn.fetchval("SELECT agent.is_blank($1)", "\u00a0x\u00a0")


async def test_memory_heads_keeps_tombstones_and_live_memories_drops_them(db: Database, world: World) -> None:
    root = await world_memory(db, world, attribute="preference.a", text="v1")
    head = await world_memory(db, world, attribute="preference.a", text="v2", supersedes=root)
    gone = await world_memory(db, world, attribute="preference.b", text="x")
    tomb = await world_memory(
        db,
        world,
        attribute="preference.b",
        text=None,
        forgotten=True,
        supersedes=gone,
    )
    async with db.connection() as conn:
        heads = {r["id"] for r in await conn.fetch("SELECT id FROM agent.memory_heads")}
        live = await conn.fetch("SELECT * FROM agent.live_memories")
    assert heads == {head, tomb}
    assert [r["id"] for r in live] == [head]
    assert "scope_owner_id" not in live[0].keys() and "forgotten_at" not in live[0].keys()
