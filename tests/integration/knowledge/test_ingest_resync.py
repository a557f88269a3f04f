"""Re-sync of a URI: the new text replaces the old in one transaction, never a mix, never nothing."""

from __future__ import annotations

import asyncio
from uuid import UUID

from knowledge.ingestion.bulk import ingest_sources
from knowledge.ingestion.core import ingest_source
from knowledge.ingestion.registration import register_uri
from knowledge.ingestion.sources import list_sources
from knowledge.ingestion.steps import embed_batch, mark_ready, prepare_chunks
from knowledge.search import search
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit
from tests.support import eventually

URI = "https://help.example/pricing"
OLD = "# Pricing\n\nThe plan costs 100 euros per seat per month for every customer."
NEW = "# Pricing\n\nThe plan costs 250 euros per seat per month for every customer."


async def _texts(kit: Kit, org: UUID) -> set[str]:
    hits = await search(kit.db, org, "plan euros per seat", include_organization=True, embedders=kit.lookup)
    return {"old" if "100 euros" in h.text else "new" if "250 euros" in h.text else "other" for h in hits}


async def _sync(kit: Kit, org: UUID, text: str) -> tuple[UUID, str, UUID | None]:
    reg = await register_uri(kit.db, kit.store, organization_id=org, uri=URI, data=text.encode(),
                             media_type="text/markdown")  # fmt: skip
    return reg.source_id, reg.outcome, reg.replaces


async def test_a_resynced_uri_answers_with_the_old_text_until_the_new_one_is_ready_then_only_the_new(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    old_id, outcome, _ = await _sync(kit, org, OLD)
    assert outcome == "created"
    await ingest_source(kit.ingestion(), old_id)
    assert await _texts(kit, org) == {"old"}

    new_id, outcome, replaces = await _sync(kit, org, NEW)
    assert (outcome, replaces) == ("resync", old_id) and new_id != old_id
    await prepare_chunks(kit.db, kit.store, new_id, FAKE)
    await embed_batch(kit.db, new_id, kit.embedders[FAKE], batch_size=100)
    assert await _texts(kit, org) == {"old"}  # every vector exists, but nothing is ready yet

    check = await mark_ready(kit.db, new_id, FAKE)
    assert check.source_ready
    assert await _texts(kit, org) == {"new"}
    async with kit.db.connection() as conn:
        rows = await conn.fetch("SELECT id, replaces FROM agent.knowledge_sources WHERE uri = $1", URI)
        old_chunks = await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1", old_id)
    assert [(r["id"], r["replaces"]) for r in rows] == [(new_id, None)]
    assert old_chunks == 0


async def test_searches_during_a_bulk_resync_see_exactly_one_version(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    old_id, _, _ = await _sync(kit, org, OLD * 20)
    await ingest_source(kit.ingestion(), old_id)
    new_id, _, _ = await _sync(kit, org, NEW * 20)
    seen: list[set[str]] = []
    done = asyncio.Event()

    async def watch() -> None:
        while not done.is_set():
            seen.append(await _texts(kit, org))

    async def looks(at_least: int) -> bool:
        return len(seen) >= at_least

    watcher = asyncio.create_task(watch())
    await eventually(lambda: looks(1), "the watcher's first look, before the resync")
    result = await ingest_sources(kit.db, kit.store, [new_id], embedders=kit.lookup)
    after = len(seen) + 2  # one look may have begun before the resync ended; the next began after it
    await eventually(lambda: looks(after), "the watcher's look after the resync")
    done.set()
    await watcher
    assert result.count("ready") == 1
    assert seen[0] == {"old"} and seen[-1] == {"new"}
    assert all(s in ({"old"}, {"new"}) for s in seen), seen  # never both, never neither


async def test_unchanged_content_is_a_no_op_and_a_failed_new_version_leaves_the_old_one_searchable(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    old_id, _, _ = await _sync(kit, org, OLD)
    await ingest_source(kit.ingestion(), old_id)
    same_id, outcome, _ = await _sync(kit, org, OLD)
    assert (same_id, outcome) == (old_id, "unchanged")

    broken = await register_uri(kit.db, kit.store, organization_id=org, uri=URI, data=bytes(range(256)) * 8)
    assert broken.outcome == "resync"
    result = await ingest_sources(kit.db, kit.store, [broken.source_id], embedders=kit.lookup)
    assert result.outcomes[0].status == "failed"
    assert await _texts(kit, org) == {"old"}
    views = {v.id: v for v in await list_sources(kit.db, org)}
    assert views[old_id].status == "ready"
    reason = views[broken.source_id].failure_reason
    assert views[broken.source_id].status == "failed" and reason and reason.startswith("document_type_unsupported")

    fixed_id, outcome, replaces = await _sync(kit, org, NEW)  # a later sync supersedes the failed version
    assert (outcome, replaces) == ("resync", old_id)
    await ingest_sources(kit.db, kit.store, [fixed_id], embedders=kit.lookup)
    assert await _texts(kit, org) == {"new"}
    assert {v.id for v in await list_sources(kit.db, org)} == {fixed_id}


async def test_a_sync_back_to_the_live_text_drops_a_pending_newer_version(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    old_id, _, _ = await _sync(kit, org, OLD)
    await ingest_source(kit.ingestion(), old_id)
    new_id, _, _ = await _sync(kit, org, NEW)
    again, outcome, _ = await _sync(kit, org, OLD)
    assert (again, outcome) == (old_id, "unchanged")
    async with kit.db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE id = $1", new_id) == 0
