"""The spec's minimum contract tests for durable memory, one test per bullet, named after its words."""

from __future__ import annotations

import asyncio
import json
import math
from collections import Counter
from uuid import UUID

import asyncpg
import pytest

import memory as memory_package
from context.builder import DefaultContextBuilder
from context.models import ContextPolicy, ContextSubject, ResourceRef
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from context.sources.application import ApplicationContextSource
from context.sources.memory import MemoryContextSource
from context.sources.personal_memory import PersonalMemoryContextSource
from memory.errors import DuplicateMemoryError, InvalidToolInputError
from memory.models import MemoryCandidate
from memory.service import MemoryService
from memory.tools import FORGET_TOOL, MEMORY_TOOL_NAMES, REMEMBER_TOOL, MemoryTools, tool_schemas
from state.db import Database
from state.scoped import record_queries
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.memory.helpers import chain_rows, make_world, request, spec, world_memory


def _builder(db: Database) -> DefaultContextBuilder:
    sources = [ApplicationContextSource(db), PersonalMemoryContextSource(db), MemoryContextSource(db)]
    return DefaultContextBuilder(ContextSourceRegistry(sources), ContextPacker())


def _policy() -> ContextPolicy:
    return ContextPolicy(
        sources=[spec("personal_memory"), spec("application"), spec("memory")], total_token_budget=30_000
    )


async def _memory_items(db: Database, subject: ContextSubject, *, limit: int | None = None) -> list:  # type: ignore[type-arg]
    return await MemoryContextSource(db).retrieve(request(subject), spec("memory", limit=limit))


async def test_a_model_cannot_write_agent_memories_except_through_memory_remember(
    db: Database, factory: Factory
) -> None:
    world = await make_world(factory)
    # The tool layer is the model's only door, and it holds these two tools.
    assert MEMORY_TOOL_NAMES == {"memory.remember", "memory.forget"}
    assert {t["name"] for t in tool_schemas()} == MEMORY_TOOL_NAMES
    assert not {"repository", "insert_revision", "insert_tombstone"} & set(memory_package.__all__)
    # The model cannot name the key, or any field the tool does not declare.
    tools = MemoryTools(MemoryService(db))
    smuggled = {"attribute": "preference.language", "text": "x", "scope": "user", "subject_key": "user:1:preference.x"}
    with pytest.raises(InvalidToolInputError):
        await tools.call(REMEMBER_TOOL, world.inv, smuggled)
    # No role but the service role can write the table or its views, so there is no way around the tool.
    for role in ("authenticated", "ac_tenant"):
        for relation in ("agent.memories", "agent.memory_heads", "agent.live_memories"):
            async with db.connection() as conn, conn.transaction():
                await conn.execute(f"SET LOCAL ROLE {role}")
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await conn.execute(
                        f"INSERT INTO {relation} (organization_id, definition_id, scope, subject_key, text) "
                        "VALUES ($1, $2, 'organization', 'organization:x:preference.x', 'x')",
                        world.org,
                        world.definition,
                    )
    assert await chain_rows(db, world.org) == []
    written = await tools.call(REMEMBER_TOOL, world.inv, {k: v for k, v in smuggled.items() if k != "subject_key"})
    [row] = await chain_rows(db, world.org)
    assert str(row["id"]) == written["memory_id"] and row["proposed_by_run_id"] == world.run


async def test_an_old_revision_and_a_tombstone_never_reach_a_brief(db: Database, factory: Factory) -> None:
    world = await make_world(factory)
    service = MemoryService(db)
    old = await service.remember(
        world.inv, MemoryCandidate(attribute="preference.language", text="British English", scope="user")
    )
    current = await service.remember(
        world.inv, MemoryCandidate(attribute="preference.language", text="American English", scope="user")
    )
    gone = await service.remember(
        world.inv, MemoryCandidate(attribute="observation.budget", text="No budget", scope="organization")
    )
    tombstone = await service.forget(world.inv, gone.id)
    for subject in (world.subject(), world.subject(definition=False)):
        brief = await _builder(db).build(request(subject), _policy())
        cited = {(r.kind, r.id) for r in brief.items}
        assert cited == {("agent.memory", str(current.id))}
        assert "American English" in brief.text
        assert "British English" not in brief.text and "No budget" not in brief.text
        assert str(old.id) not in brief.text and str(tombstone.id) not in brief.text


async def test_a_memory_naming_an_entity_of_another_tenant_is_dropped_for_that_subject(
    db: Database, factory: Factory
) -> None:
    world = await make_world(factory)
    ours = await factory.company(world.org)
    theirs = await factory.company(await factory.organization())
    kept = await world_memory(
        db,
        world,
        attribute="observation.a",
        refs=[{"kind": "crm.company", "id": str(ours)}],
    )
    await world_memory(
        db,
        world,
        attribute="observation.b",
        refs=[{"kind": "crm.company", "id": str(theirs)}],
    )
    for subject in (world.subject(), world.subject(definition=False), world.subject(user=False, trigger=True)):
        assert [UUID(i.ref.id) for i in await _memory_items(db, subject)] == [kept]


async def test_a_memory_about_a_companys_buying_process_is_not_dropped_by_a_crm_row_about_its_lifecycle(
    db: Database, factory: Factory
) -> None:
    world = await make_world(factory)
    company = await factory.company(world.org, lifecycle_stage="customer")
    await MemoryService(db).remember(
        world.inv,
        MemoryCandidate.model_validate(
            {
                "attribute": "observation.buying_process",
                "text": "Buys through a procurement committee",
                "scope": "organization",
                "subject_refs": [{"kind": "crm.company", "id": str(company)}],
            }
        ),
    )
    ref = ResourceRef(kind="crm.company", id=str(company))
    brief = await _builder(db).build(request(world.subject(), entities=[ref]), _policy())
    assert "customer" in brief.text and "Buys through a procurement committee" in brief.text
    assert brief.dropped.get("memory", 0) == 0
    assert {"application", "memory"} <= set(brief.per_source_tokens)


async def test_a_memory_whose_stored_ref_names_a_kind_no_resolver_owns_is_dropped(
    db: Database, factory: Factory
) -> None:
    world = await make_world(factory)
    plain = await world_memory(db, world, attribute="observation.plain")
    for kind in ("crm.opportunity", "agent.run", "crm.companies"):
        await world_memory(
            db,
            world,
            attribute=f"observation.{kind[-5:]}",
            refs=[{"kind": kind, "id": str(world.run)}],
        )
    with record_queries() as log:
        items = await _memory_items(db, world.subject())
    assert [UUID(i.ref.id) for i in items] == [plain]
    assert log.entries == []  # an unowned kind costs no resolver query either


async def test_one_memory_read_resolves_each_ref_kind_once_never_one_query_for_each_row(
    db: Database, factory: Factory
) -> None:
    world = await make_world(factory)
    companies = [await factory.company(world.org) for _ in range(150)]
    people = [await factory.person(world.org) for _ in range(10)]
    named = [
        *((companies[n % 150], "crm.company") for n in range(250)),
        *((people[n % 10], "crm.person") for n in range(20)),
    ]
    async with db.connection() as conn:
        await conn.executemany(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key, text,"
            " subject_refs) VALUES ($1, $2, 'organization', $1, $3, 'fact', $4::text::jsonb)",
            [
                (
                    world.org,
                    world.definition,
                    f"{kind}:{ident}:observation.n{n}",
                    json.dumps([{"kind": kind, "id": str(ident)}]),
                )
                for n, (ident, kind) in enumerate(named)
            ],
        )
    with record_queries() as log:
        items = await _memory_items(db, world.subject(), limit=270)
    assert len(items) == 270
    per_table = Counter(log.tables())
    # One query per kind per batch of 100 distinct ids: 150 companies are 2 batches, 10 people one.
    assert per_table == {"crm_companies": math.ceil(150 / 100), "crm_people": 1}


async def test_a_trigger_run_reads_organization_memory_alone(db: Database, factory: Factory) -> None:
    world = await make_world(factory)
    ours = await world_memory(db, world, attribute="observation.shared")
    await world_memory(db, world, user=world.user, attribute="observation.personal")
    await world_memory(db, world, user=world.user, attribute="preference.language")
    trigger = ContextSubject.for_run(
        organization_id=world.org, definition_id=world.definition, trigger_id=world.trigger
    )
    assert [UUID(i.ref.id) for i in await _memory_items(db, trigger)] == [ours]
    personal = await PersonalMemoryContextSource(db).retrieve(request(trigger), spec("personal_memory"))
    assert personal == []


async def test_re_observing_unchanged_text_writes_no_second_memory_row(db: Database, factory: Factory) -> None:
    world = await make_world(factory)
    tools = MemoryTools(MemoryService(db))
    args = {"attribute": "observation.headcount", "text": "About 40 people", "scope": "organization"}
    await tools.call(REMEMBER_TOOL, world.inv, args)
    with pytest.raises(DuplicateMemoryError):
        await tools.call(REMEMBER_TOOL, world.inv, args)
    assert len(await chain_rows(db, world.org)) == 1


async def test_concurrent_changes_form_one_linear_chain_with_one_current_head(db_url: str, factory: Factory) -> None:
    world = await make_world(factory)
    writers = 50  # each on its own pooled connection: the pool holds one per writer
    wide = await Database.open(load_settings(pool_min_size=writers, pool_max_size=writers), url=db_url, migrate=False)
    try:
        service = MemoryService(wide)

        async def write(n: int) -> UUID:
            candidate = MemoryCandidate(attribute="preference.tone", text=f"tone #{n}", scope="user")
            return (await service.remember(world.inv, candidate)).id

        written = await asyncio.gather(*(write(n) for n in range(writers)))
    finally:
        await wide.close()
    rows = await chain_rows(factory.db, world.org)
    assert len(rows) == writers and sorted(written) == sorted(r["id"] for r in rows)
    roots = [r for r in rows if r["supersedes_id"] is None]
    assert len(roots) == 1, "one root"
    children = Counter(r["supersedes_id"] for r in rows if r["supersedes_id"] is not None)
    assert max(children.values()) == 1, "no forks: one child per revision"
    by_parent = {r["supersedes_id"]: r for r in rows}
    walk, node = [], roots[0]
    while node is not None:
        walk.append(node["id"])
        node = by_parent.get(node["id"])
    assert len(walk) == writers, "one linear chain through every revision"
    async with factory.db.connection() as conn:
        heads = await conn.fetch("SELECT id FROM agent.memory_heads WHERE organization_id = $1", world.org)
    assert [h["id"] for h in heads] == [walk[-1]], "exactly one current head, the end of the chain"
    assert service.races_lost > 0, "the writers raced on the chain constraints, so the reload path ran"


async def test_forgetting_a_memory_appends_one_tombstone_and_exposes_no_older_revision(
    db: Database, factory: Factory
) -> None:
    world = await make_world(factory)
    tools = MemoryTools(MemoryService(db))
    first = await tools.call(
        REMEMBER_TOOL, world.inv, {"attribute": "preference.tone", "text": "Formal", "scope": "user"}
    )
    second = await tools.call(
        REMEMBER_TOOL, world.inv, {"attribute": "preference.tone", "text": "Casual", "scope": "user"}
    )
    before = {r["id"] for r in await chain_rows(db, world.org)}
    await tools.call(FORGET_TOOL, world.inv, {"memory_id": second["memory_id"]})
    after = await chain_rows(db, world.org)
    [tombstone] = [r for r in after if r["id"] not in before]
    assert len(after) == len(before) + 1
    assert tombstone["text"] is None and tombstone["forgotten_at"] is not None
    assert str(tombstone["supersedes_id"]) == second["memory_id"]
    for subject in (world.subject(), world.subject(definition=False)):
        assert await _memory_items(db, subject) == []
        assert await PersonalMemoryContextSource(db).retrieve(request(subject), spec("personal_memory")) == []
    async with db.connection() as conn:
        live = await conn.fetch("SELECT id FROM agent.live_memories WHERE organization_id = $1", world.org)
    assert live == [] and first["memory_id"] not in {str(r["id"]) for r in after if r["forgotten_at"]}
