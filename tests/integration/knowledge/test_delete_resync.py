"""Deleting a source whose URI is being re-synced: a delete by the id of any version of the URI deletes every
version, waits for a swap in flight instead of missing it, and never answers 404 while a version is searchable."""

from __future__ import annotations

import asyncio
from uuid import UUID

import pytest

from knowledge.errors import SourceDeletedError, SourceDeletingError, UnknownSourceError
from knowledge.ingestion.core import ingest_source
from knowledge.ingestion.delete import delete_source
from knowledge.ingestion.registration import register_uri
from state.receipts import Receipt
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit
from tests.integration.knowledge.test_delete import GONE, _hits, _rows_of

URI = "https://help.example/zeppelin"
NEW = GONE.replace("ballast crate", "helium cell")
NOTHING = {"chunks": 0, "models": 0, "searchable": 0, "sources": 0}


async def _version(kit: Kit, org: UUID, text: str, *, ingest: bool = True) -> UUID:
    registered = await register_uri(kit.db, kit.store, organization_id=org, uri=URI, data=text.encode(),
                                    media_type="text/markdown")  # fmt: skip
    if ingest:
        await ingest_source(kit.ingestion(), registered.source_id)
    return registered.source_id


async def _delete(kit: Kit, org: UUID, source_id: UUID) -> Receipt:
    return await delete_source(kit.db, kit.store, source_id, organization_id=org, operator=False, requested_by="t")


async def _lock_waiters(kit: Kit) -> int:
    async with kit.db.connection() as conn:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        )


async def _until_waiting(kit: Kit, n: int) -> None:
    """Wait (generous deadline) until `n` sessions wait on a row lock."""
    for _ in range(3000):
        if await _lock_waiters(kit) >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{n} sessions never waited on a lock")


async def test_a_delete_of_the_old_id_during_the_swap_waits_for_it_and_deletes_the_new_version(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    old = await _version(kit, org, GONE)
    new = await _version(kit, org, NEW, ingest=False)
    async with kit.db.connection() as blocker, blocker.transaction():
        # Hold the old row so the swap (make-ready of the new version) stops halfway, its transaction open.
        await blocker.execute("SELECT 1 FROM agent.knowledge_sources WHERE id = $1 FOR SHARE", old)
        ingesting = asyncio.create_task(ingest_source(kit.ingestion(), new))
        await _until_waiting(kit, 1)
        deleting = asyncio.create_task(_delete(kit, org, old))
        await _until_waiting(kit, 2)
    outcome = await ingesting
    receipt = await deleting  # the rule: never 404 while the new version would stay searchable
    assert str(outcome.status) == "done"
    assert receipt.status == "complete" and receipt.target_id == old and receipt.versions == (new,)
    assert await _rows_of(kit, new) == NOTHING and await _rows_of(kit, old) == NOTHING
    assert not any("zeppelin" in t for t in await _hits(kit, org, "zeppelin helium cell"))
    for asked in (old, new):  # a repeat by either id names the receipt
        with pytest.raises(SourceDeletedError) as repeat:
            await _delete(kit, org, asked)
        assert repeat.value.receipt_id == str(receipt.id)


async def test_a_delete_of_the_new_id_before_it_replaced_deletes_both_versions(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    old = await _version(kit, org, GONE)
    new = await _version(kit, org, NEW, ingest=False)
    receipt = await _delete(kit, org, new)
    assert set(receipt.versions) == {old, new} and receipt.counts["agent.knowledge_sources"] == 2
    assert await _rows_of(kit, old) == NOTHING and await _rows_of(kit, new) == NOTHING
    assert not any("zeppelin" in t for t in await _hits(kit, org, "zeppelin ballast crate"))
    outcome = await ingest_source(kit.ingestion(), new)
    assert str(outcome.status) == "deleted"


async def test_a_delete_of_the_old_id_after_the_resync_deletes_the_current_version(kit: Kit, factory: Factory) -> None:
    org, other = await factory.organization(), await factory.organization()
    old = await _version(kit, org, GONE)
    new = await _version(kit, org, NEW)
    newest = await _version(kit, org, NEW + "\n\nA third revision.")
    assert any("zeppelin" in t for t in await _hits(kit, org, "zeppelin helium cell"))
    async with kit.db.connection() as conn:
        earlier = await conn.fetchval("SELECT earlier_versions FROM agent.knowledge_sources WHERE id = $1", newest)
    assert earlier == [old, new]
    with pytest.raises(UnknownSourceError):  # another organization learns nothing
        await _delete(kit, other, old)
    receipt = await _delete(kit, org, old)
    assert receipt.versions == (newest,) and receipt.target_id == old
    assert await _rows_of(kit, newest) == NOTHING
    assert not any("zeppelin" in t for t in await _hits(kit, org, "zeppelin helium cell"))


async def test_a_resync_registered_while_a_delete_waits_is_refused_not_left_behind(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    old = await _version(kit, org, GONE)
    async with kit.db.connection() as blocker, blocker.transaction():
        await blocker.execute("SELECT 1 FROM agent.knowledge_sources WHERE id = $1 FOR SHARE", old)
        deleting = asyncio.create_task(_delete(kit, org, old))
        await _until_waiting(kit, 1)
        resync = asyncio.create_task(_version(kit, org, NEW, ingest=False))
        for _ in range(3000):  # the registration waits behind the delete (or, without its lock, commits)
            if resync.done() or await _lock_waiters(kit) >= 2:
                break
            await asyncio.sleep(0.01)
    receipt = await deleting
    with pytest.raises(SourceDeletingError):
        await resync
    assert receipt.versions == (old,)
    async with kit.db.connection() as conn:
        left = await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE uri = $1", URI)
    assert left == 0, "no version of the deleted URI is left to become searchable"
