"""Counters kept by triggers (migration 0117): the lists' totals stay exact without counting rows.

The rules: after inserts, supersessions, tombstones, a revision written over a tombstone, expiry, an
erasure of a person and concurrent writers on two connections, `agent.organization_counts` gives the same
sources per status and live memories that counting the rows gives; the organizations page and the memories
page report those figures; another organization's counts never move.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from knowledge.documents.objects import LocalObjectStore
from memory.erasure import erase_user
from memory.pages import page_memories
from state.db import Database
from state.organization_overview import page_organizations
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit
from tests.integration.memory.helpers import World, make_world, world_memory


@pytest.fixture
async def kit(db: Database, tmp_path: Path) -> Kit:
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    return kit


async def _counted(db: Database, org: UUID) -> dict[str, Any]:
    """The organization's figures as the lists report them (from the counters)."""
    row = next(o for o in (await page_organizations(db, limit=1000)).items if o.id == org)
    memories = (await page_memories(db, organization_id=org, limit=1)).total
    assert memories == row.memories, "the memories list and the organizations list report the same total"
    return {"sources": row.sources_by_status, "memories": memories}


async def _truth(db: Database, org: UUID) -> dict[str, Any]:
    """The same figures by counting the rows."""
    async with db.connection() as conn:
        by_status = await conn.fetch(
            "SELECT status, count(*)::int AS n FROM agent.knowledge_sources WHERE organization_id = $1 GROUP BY 1",
            org,
        )
        memories = await conn.fetchval("SELECT count(*) FROM agent.live_memories WHERE organization_id = $1", org)
    return {"sources": {r["status"]: r["n"] for r in by_status}, "memories": memories}


async def _assert_exact(db: Database, *orgs: UUID) -> None:
    for org in orgs:
        assert await _counted(db, org) == await _truth(db, org)


async def test_memory_totals_stay_exact_through_chains_tombstones_expiry_and_erasure(
    db: Database, factory: Factory
) -> None:
    world, other = await make_world(factory), await make_world(factory)
    await world_memory(db, other, text="theirs")
    old = await world_memory(db, world, text="old")
    await world_memory(db, world, text="new", supersedes=old)
    gone = await world_memory(db, world, attribute="observation.gone", text="gone")
    tomb = await world_memory(db, world, attribute="observation.gone", text=None, supersedes=gone, forgotten=True)
    await _assert_exact(db, world.org, other.org)
    await world_memory(db, world, attribute="observation.gone", text="back again", supersedes=tomb)
    await world_memory(
        db, world, attribute="observation.past", text="expired",
        created_at=datetime.now(UTC) - timedelta(days=2), expires_at=datetime.now(UTC) - timedelta(days=1),
    )  # fmt: skip
    await world_memory(
        db, world, attribute="observation.soon", text="expires later", expires_at=datetime.now(UTC) + timedelta(days=1)
    )
    mine = await world_memory(db, world, user=world.user, attribute="preference.tone", text="short")
    await world_memory(db, world, user=world.user, attribute="preference.tone", text="shorter", supersedes=mine)
    await world_memory(db, world, user=world.user, attribute="preference.lang", text="en")
    await _assert_exact(db, world.org, other.org)
    assert (await _counted(db, world.org))["memories"] == 5
    await erase_user(db, world.org, world.user, requested_by="test")
    await _assert_exact(db, world.org, other.org)
    assert (await _counted(db, world.org))["memories"] == 3


async def test_source_totals_stay_exact_through_status_changes_and_deletes(
    db: Database, factory: Factory, kit: Kit
) -> None:
    world = await make_world(factory)
    other = await factory.organization("Other")
    await kit.ingest(world.org, "## One\n\nalpha beta gamma")
    failed = await kit.register(world.org, "broken")
    await kit.set_failed(failed)
    waiting = await kit.register(world.org, "waiting")
    await kit.register(other, "theirs")
    await _assert_exact(db, world.org, other)
    async with db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'deleting', pending_since = NULL WHERE id = $1", waiting
        )
        await _assert_exact(db, world.org, other)
        await conn.execute("DELETE FROM agent.knowledge_sources WHERE id = ANY($1)", [waiting, failed])
    await _assert_exact(db, world.org, other)
    assert (await _counted(db, world.org))["sources"] == {"ready": 1}


async def _remember_many(db: Database, world: World, prefix: str, n: int, gate: asyncio.Event) -> None:
    """`n` memories in one statement of its own transaction, held open until `gate` opens (one statement, so a
    trigger that recounted under its statement's snapshot instead of adding a delta would miss the other's)."""
    async with db.connection() as conn, conn.transaction():
        await conn.execute(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key, text)"
            " SELECT $1, $2, 'organization', $1, $3 || g, 'x' FROM generate_series(1, $4) AS g",
            world.org, world.definition, f"organization:{world.org}:observation.{prefix}", n,
        )  # fmt: skip
        await gate.wait()


async def test_two_writers_at_once_keep_the_totals_exact(db: Database, factory: Factory) -> None:
    world = await make_world(factory)
    await world_memory(db, world, text="before")
    gate = asyncio.Event()
    writers = [asyncio.create_task(_remember_many(db, world, p, 7, gate)) for p in ("a", "b")]
    await asyncio.sleep(0.5)  # both transactions have written and hold their rows uncommitted
    gate.set()
    await asyncio.gather(*writers)
    await _assert_exact(db, world.org)
    assert (await _counted(db, world.org))["memories"] == 15
