"""Bulk ingestion over batches that arrive while earlier ones are ingested (the CLI registers in waves)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from uuid import UUID

import pytest

from knowledge._bulk import ingest_source_batches
from knowledge.errors import ObjectStoreError
from knowledge.objects import LocalObjectStore
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit
from tests.integration.knowledge.lexical import assert_consistent


class _GatedStore(LocalObjectStore):
    """A real local store whose reads wait until `opened` is set."""

    def __init__(self, store: LocalObjectStore) -> None:
        super().__init__(store.root)
        self.opened = asyncio.Event()

    async def get(self, key: str) -> bytes:
        await self.opened.wait()
        return await super().get(key)


async def test_every_batch_is_ingested_once_and_outcomes_follow_first_arrival(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    ids = [await kit.register(org, f"lifecycle note {n} of the renewal pipeline") for n in range(7)]
    failed = await kit.register(org, "")

    async def batches() -> AsyncIterator[Sequence[UUID]]:
        yield ids[:3]
        yield []
        yield [ids[2], failed, *ids[3:5]]  # ids[2] again: ingested once, reported once
        yield ids[5:] + ids[:1]

    result = await ingest_source_batches(kit.db, kit.store, batches(), embedders=kit.lookup, wave_documents=2)
    assert [o.source_id for o in result.outcomes] == [*ids[:3], failed, *ids[3:]]
    assert [o.status for o in result.outcomes] == ["ready"] * 3 + ["failed"] + ["ready"] * 4
    async with kit.db.connection() as conn:
        chunks = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = ANY($1::uuid[])", ids
        )
    assert chunks == len(ids)
    await assert_consistent(kit.db)


async def test_the_next_batch_is_fetched_while_the_current_one_is_read(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    first = await kit.register(org, "the first wave's document")
    second = await kit.register(org, "the second wave's document")
    store = _GatedStore(kit.store)

    async def batches() -> AsyncIterator[Sequence[UUID]]:
        yield [first]
        store.opened.set()  # reached only if the second batch is asked for before the first one is read
        yield [second]

    # Without fetching ahead the first batch's read waits forever: the guard turns that into a failure.
    result = await asyncio.wait_for(ingest_source_batches(kit.db, store, batches(), embedders=kit.lookup), timeout=60)
    assert [o.status for o in result.outcomes] == ["ready", "ready"]


async def test_an_error_while_fetching_a_batch_reaches_the_caller_after_the_earlier_batches(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    first = await kit.register(org, "written before the producer fails")

    async def batches() -> AsyncIterator[Sequence[UUID]]:
        yield [first]
        raise ObjectStoreError("the object store went away while registering the next wave")

    with pytest.raises(ObjectStoreError, match="went away"):
        await ingest_source_batches(kit.db, kit.store, batches(), embedders=kit.lookup)
    async with kit.db.connection() as conn:
        status = await conn.fetchval("SELECT status FROM agent.knowledge_sources WHERE id = $1", first)
        chunks = await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1", first)
    assert (status, chunks) in {("ready", 1), ("pending", 0)}  # its write committed whole or rolled back
    await assert_consistent(kit.db)
