"""The memory and personal_memory sources: what each subject reads, the order, the cap, the partition, the guard."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from context.sources.memory import MemoryContextSource
from context.sources.personal_memory import PersonalMemoryContextSource
from state.db import Database
from state.scoped import record_queries
from tests.factories import Factory
from tests.integration.memory.helpers import World, raw_memory, request, spec, world_memory

T0 = datetime(2025, 1, 1, tzinfo=UTC)


async def _memory(db: Database, world: World, subject_kwargs: dict[str, bool] | None = None, **spec_kw: object) -> list:  # type: ignore[type-arg]
    subject = world.subject(**(subject_kwargs or {}))
    return await MemoryContextSource(db).retrieve(request(subject), spec("memory", **spec_kw))  # type: ignore[arg-type]


async def _personal(db: Database, world: World, subject_kwargs: dict[str, bool] | None = None) -> list:  # type: ignore[type-arg]
    subject = world.subject(**(subject_kwargs or {}))
    return await PersonalMemoryContextSource(db).retrieve(request(subject), spec("personal_memory"))


async def test_items_carry_the_stored_key_the_memory_ref_the_subject_and_the_time(
    db: Database, world: World, factory: Factory
) -> None:
    company = await factory.company(world.org)
    ref = {"kind": "crm.company", "id": str(company), "label": "Acme: HQ"}
    memory = await world_memory(
        db,
        world,
        refs=[ref],
        attribute="observation.buying_process",
        text="Buys through a committee",
    )
    [item] = await _memory(db, world)
    assert (item.source, item.kind, item.body) == ("memory", "memory", "Buys through a committee")
    assert item.subject_key == f"crm.company:{company}:observation.buying_process"
    assert (item.ref.kind, item.ref.id) == ("agent.memory", str(memory))
    assert [(r.kind, r.id) for r in item.body_refs] == [("crm.company", str(company))]
    assert item.recorded_at is not None and item.tokens > 0


async def test_memory_is_ordered_newest_first_with_the_id_breaking_a_tie(db: Database, world: World) -> None:
    ids = []
    for n, at in enumerate([T0, T0 + timedelta(hours=1), T0 + timedelta(hours=1), T0 - timedelta(hours=1)]):
        ids.append(await world_memory(db, world, attribute=f"observation.n{n}", created_at=at))
    tied = sorted(ids[1:3], key=lambda u: u.hex, reverse=True)  # uuid order equals PostgreSQL's uuid order
    expected = [*tied, ids[0], ids[3]]
    assert [UUID(i.ref.id) for i in await _memory(db, world)] == expected


async def test_limit_caps_the_read_none_reads_twenty_and_zero_reads_nothing(db: Database, world: World) -> None:
    for n in range(25):
        await world_memory(
            db,
            world,
            attribute=f"observation.n{n}",
            created_at=T0 + timedelta(minutes=n),
        )
    assert len(await _memory(db, world)) == 20
    capped = await _memory(db, world, limit=3)
    assert [i.title for i in capped] == ["observation.n24", "observation.n23", "observation.n22"]

    class NoDatabase:
        @asynccontextmanager
        async def connection(self) -> AsyncIterator[None]:
            raise AssertionError("a zero limit must not read the database")
            yield

    source = MemoryContextSource(NoDatabase())  # type: ignore[arg-type]
    assert await source.retrieve(request(world.subject()), spec("memory", limit=0)) == []
    personal = PersonalMemoryContextSource(NoDatabase())  # type: ignore[arg-type]
    assert await personal.retrieve(request(world.subject()), spec("personal_memory", limit=0)) == []


async def test_a_run_reads_its_definition_and_a_turn_with_no_definition_reads_every_definition(
    db: Database, world: World, factory: Factory
) -> None:
    other_agent = await factory.definition(world.org)
    await world_memory(db, world, attribute="observation.mine", created_at=T0)
    await raw_memory(db, org=world.org, definition=other_agent, attribute="observation.theirs")
    stranger = await factory.organization()
    await raw_memory(db, org=stranger, definition=await factory.definition(stranger), attribute="observation.x")
    assert [i.title for i in await _memory(db, world)] == ["observation.mine"]
    turn = await _memory(db, world, {"definition": False})
    assert sorted(i.title for i in turn) == ["observation.mine", "observation.theirs"]


async def test_a_user_reads_their_own_chain_and_never_another_persons(db: Database, world: World) -> None:
    for who in (world.user, world.other_user):
        await world_memory(
            db,
            world,
            user=who,
            attribute="observation.seen",
            text=f"seen by {who}",
        )
    for subject in ({}, {"definition": False}):
        bodies = [i.body for i in await _memory(db, world, subject)]
        assert bodies == [f"seen by {world.user}"]


async def test_personal_memory_reads_the_persons_preferences_and_memory_keeps_them_too(
    db: Database, world: World
) -> None:
    pref = await world_memory(
        db,
        world,
        user=world.user,
        attribute="preference.language",
        text="British English",
    )
    observed = await world_memory(
        db,
        world,
        user=world.user,
        attribute="observation.timezone",
        text="Works from Lisbon",
    )
    org_pref = await world_memory(db, world, attribute="preference.tone", text="Formal")
    personal = await _personal(db, world)
    memory = await _memory(db, world)
    assert [(i.kind, UUID(i.ref.id)) for i in personal] == [("personal_memory", pref)]
    # memory keeps the preference: the packer, not the read, decides which copy a brief shows.
    assert sorted(UUID(i.ref.id) for i in memory) == sorted([pref, observed, org_pref])
    assert {i.subject_key for i in personal} <= {i.subject_key for i in memory}, "one key, so the packer dedupes"
    # With no definition (a Front Door turn) personal memory widens to every definition, like memory.
    assert [UUID(i.ref.id) for i in await _personal(db, world, {"definition": False})] == [pref]
    turn = {UUID(i.ref.id) for i in await _memory(db, world, {"definition": False})}
    assert turn == {pref, observed, org_pref}


async def test_personal_memory_reads_nothing_for_a_subject_with_no_user_or_with_a_trigger(
    db: Database, world: World
) -> None:
    await world_memory(db, world, user=world.user, attribute="preference.language")
    with record_queries() as log:
        assert await _personal(db, world, {"user": False}) == []
        assert await _personal(db, world, {"user": True, "trigger": True}) == []
    assert log.entries == []


async def test_a_malformed_stored_element_costs_its_own_memory_never_the_page(
    db: Database, world: World, factory: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    company = await factory.company(world.org)
    async with db.connection() as conn:  # an environment the element CHECK has not reached yet
        await conn.execute("ALTER TABLE agent.memories DROP CONSTRAINT memories_subject_ref_elements_well_formed")
        await conn.execute("ALTER TABLE agent.memories DROP CONSTRAINT memories_subject_refs_at_most_one")
    good = await world_memory(
        db,
        world,
        attribute="observation.good",
        refs=[{"kind": "crm.company", "id": str(company), "extra": 1}],
    )
    await world_memory(
        db,
        world,
        attribute="observation.no_id",
        refs=[{"kind": "crm.company"}],
        key="crm.company:x:observation.no_id",
    )
    await world_memory(
        db,
        world,
        attribute="observation.nbsp",
        refs=[{"kind": "crm.company", "id": "\u00a0"}],
    )
    two = [{"kind": "crm.company", "id": str(company)}, {"kind": "crm.company", "id": str(company)}]
    await world_memory(db, world, attribute="observation.two", refs=two)
    with caplog.at_level(logging.WARNING, logger="memory.reads"):
        items = await _memory(db, world)
    assert [UUID(i.ref.id) for i in items] == [good]
    assert sum("malformed" in r.getMessage() for r in caplog.records) == 2
    assert sum("names 2 subjects" in r.getMessage() for r in caplog.records) == 1


async def test_a_ref_that_is_deleted_or_never_existed_drops_its_memory_and_nothing_refills(
    db: Database, world: World, factory: Factory
) -> None:
    live = await factory.company(world.org)
    deleted = await factory.company(world.org, deleted_at=T0)
    for n, company in enumerate([live, deleted, UUID(int=7)]):
        await world_memory(
            db,
            world,
            attribute=f"observation.n{n}",
            refs=[{"kind": "crm.company", "id": str(company)}],
            created_at=T0 + timedelta(minutes=n),
        )
    await world_memory(db, world, attribute="observation.older", created_at=T0 - timedelta(days=1))
    items = await _memory(db, world, limit=3)
    assert [i.title for i in items] == [f"observation.n0 of crm.company {live}"]
