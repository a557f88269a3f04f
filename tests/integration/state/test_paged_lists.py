"""Paged reads of organizations (with their overview counts), API keys and receipts (state/paging.py).

The rules: a walk by cursor shows every row once in the list's order while rows arrive between pages;
`total` counts the rows the filters match; the organization overview counts sources by status, overdue
sources, chunks under the live model, live memories and the last ingestion of each organization on the
page; a cursor of another list or other filters is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from uuid import uuid4

import pytest

from knowledge.documents.objects import LocalObjectStore
from state.api_keys import mint_key, page_keys
from state.db import Database
from state.organization_overview import page_organizations
from state.paging import InvalidCursorError, Page
from state.receipts import begin_receipt, finish_receipt, page_receipts
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit
from tests.integration.memory.helpers import make_world, world_memory

T = TypeVar("T")


@pytest.fixture
async def kit(db: Database, tmp_path: Path) -> Kit:
    """Knowledge ingestion on the fake model, to give an organization sources and chunks."""
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    return kit


async def _walk(
    fetch: Callable[[str | None], Awaitable[Page[T]]], between: Callable[[], Awaitable[Any]] | None = None
) -> list[T]:
    seen: list[T] = []
    cursor: str | None = None
    for _ in range(100):  # a cursor that never advances fails here, never hangs
        page = await fetch(cursor)
        seen.extend(page.items)
        if between is not None:
            await between()
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor
    raise AssertionError("the walk never reached a last page")


async def test_organizations_walk_oldest_first_once_each_while_organizations_arrive(
    db: Database, factory: Factory
) -> None:
    ids = [await factory.organization(f"Acme {i}") for i in range(5)]
    async with db.connection() as conn:  # ties on created_at are ordered by id
        await conn.execute("UPDATE public.organizations SET created_at = '2026-01-01' WHERE id = ANY($1)", ids[:3])
    seen = await _walk(lambda c: page_organizations(db, cursor=c, limit=2), lambda: factory.organization("Late"))
    acme = [o.id for o in seen if o.name.startswith("Acme")]
    assert sorted(acme) == sorted(ids) and len(acme) == 5, "every organization there when the walk began, once"
    assert len({o.id for o in seen}) == len(seen), "no organization twice, late ones included"
    order = [(o.created_at, o.id) for o in seen]
    assert order == sorted(order), "oldest first, ties by id"


async def test_organizations_filter_by_name_with_the_total(db: Database, factory: Factory) -> None:
    wanted = {await factory.organization("Northwind Traders"), await factory.organization("NORTHWIND labs")}
    await factory.organization("Contoso")
    page = await page_organizations(db, name=" northwind ", limit=1)
    assert page.total == 2 and len(page.items) == 1, "the total counts every match, the page holds one"
    assert {o.id for o in await _walk(lambda c: page_organizations(db, name="northwind", cursor=c, limit=1))} == wanted
    assert (await page_organizations(db, name="%")).total == 0, "the text is text, not a LIKE pattern"
    with pytest.raises(InvalidCursorError):
        await page_organizations(db, name="contoso", cursor=page.next_cursor)


async def test_the_overview_counts_what_each_organization_holds(db: Database, factory: Factory, kit: Kit) -> None:
    world = await make_world(factory)
    empty = await factory.organization("Empty")
    ready = await kit.ingest(world.org, "## One\n\nalpha beta gamma\n\n## Two\n\ndelta epsilon")
    failed = await kit.register(world.org, "broken")
    await kit.set_failed(failed)
    pending = await kit.register(world.org, "waiting")
    async with db.connection() as conn:
        await conn.execute("UPDATE agent.knowledge_sources SET review_by = '2020-01-01' WHERE id = $1", pending)
        chunks = await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1", ready)
        ingested = await conn.fetchval(
            "SELECT updated_at FROM agent.knowledge_source_models WHERE source_id = $1", ready
        )
    old = await world_memory(db, world, text="old")
    await world_memory(db, world, text="new", supersedes=old)
    await world_memory(db, world, user=world.user, attribute="preference.tone", text="short")
    gone = await world_memory(db, world, attribute="observation.gone", text="gone")
    await world_memory(db, world, attribute="observation.gone", text=None, supersedes=gone, forgotten=True)
    rows = {o.id: o for o in (await page_organizations(db)).items}
    mine, nothing = rows[world.org], rows[empty]
    assert mine.sources_by_status == {"ready": 1, "failed": 1, "pending": 1}
    assert (mine.overdue_sources, mine.chunks, mine.memories) == (1, chunks, 2), "live memories: not old, not gone"
    assert mine.last_ingested_at == ingested
    assert (nothing.sources_by_status, nothing.chunks, nothing.memories, nothing.last_ingested_at) == ({}, 0, 0, None)
    assert mine.as_json()["sources_by_status"] == {"ready": 1, "failed": 1, "pending": 1}


async def test_keys_page_oldest_first_with_the_total(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    minted = [(await mint_key(db, organization_id=org, name=f"k{i}")).key.id for i in range(5)]
    await mint_key(db, organization_id=None, name="operator")
    seen = await _walk(
        lambda c: page_keys(db, organization_id=org, cursor=c, limit=2),
        lambda: mint_key(db, organization_id=org, name="late"),
    )
    assert [k.id for k in seen][:5] == minted, "oldest first, every key once"
    assert len({k.id for k in seen}) == len(seen)
    assert (await page_keys(db, organization_id=org, limit=1)).total == len(seen) + 1, "the last page's late key too"
    with pytest.raises(InvalidCursorError):
        await page_keys(
            db, organization_id=None, cursor=(await page_keys(db, organization_id=org, limit=1)).next_cursor
        )


async def test_receipts_page_newest_first_with_the_total(db: Database) -> None:
    org = uuid4()
    ids = []
    async with db.connection() as conn:
        for _ in range(5):
            receipt = await begin_receipt(conn, "user", organization_id=org, target_id=uuid4(), requested_by="cli")
            ids.append((await finish_receipt(conn, receipt.id)).id)
    seen = await _walk(lambda c: page_receipts(db, organization_id=org, cursor=c, limit=2))
    assert [r.id for r in seen] == list(reversed(ids)), "newest first, every receipt once"
    assert (await page_receipts(db, organization_id=org, limit=2)).total == 5
    assert (await page_receipts(db, organization_id=uuid4())).total == 0
