"""The spec's minimum contract tests for knowledge, one test per bullet, named after its words."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import asyncpg
import pytest
from pgvector import Vector

from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.live_model import begin_switch, flip_live_model
from knowledge.ingestion.registration import register_upload, register_uri
from knowledge.ingestion.sources import list_sources
from knowledge.ingestion.sweep import sweep_pending
from knowledge.search import search
from knowledge.switchover import reembed_source
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, FAKE2, Kit

SAME_TEXT = "Lifecycle stage means where a company stands: lead, opportunity or customer."


@pytest.fixture
async def kit(db: Database, tmp_path: Path) -> Kit:
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    return kit


async def test_an_organization_a_vector_search_cannot_return_organization_b_chunks(kit: Kit, factory: Factory) -> None:
    a = await factory.organization()
    b = await factory.organization()
    own = await kit.ingest(a, SAME_TEXT)
    await kit.ingest(b, SAME_TEXT)  # the very same words: the nearest vector B holds is identical to A's
    await kit.ingest(b, "Lifecycle lifecycle lifecycle stage stage stage.")
    hits = await search(
        kit.db, a, "lifecycle stage", include_platform=True, include_organization=True, limit=50, embedders=kit.lookup
    )
    assert hits and {h.source_id for h in hits} == {own}
    assert {h.source_organization_id for h in hits} == {a}
    # The function itself, on the service role (no RLS), filters the organization explicitly.
    query = Vector((await kit.lookup(FAKE).embed(["lifecycle stage"]))[0])
    async with kit.db.connection() as conn:
        rows = await conn.fetch("SELECT * FROM knowledge_search($1, $2, $3, true, true, 50)", a, query, "lifecycle")
    assert {r["source_organization_id"] for r in rows} == {a}


async def test_platform_documents_are_reachable_without_weakening_a_tenant_rule(kit: Kit, factory: Factory) -> None:
    a = await factory.organization()
    b = await factory.organization()
    platform = await kit.ingest(None, "In the CRM, lifecycle means the stage of a company.")
    own = await kit.ingest(a, "A's lifecycle playbook.")
    await kit.ingest(b, "B's lifecycle playbook.")
    both = await search(kit.db, a, "lifecycle", include_platform=True, include_organization=True, embedders=kit.lookup)
    platform_only = await search(kit.db, a, "lifecycle", include_platform=True, embedders=kit.lookup)
    assert {h.source_id for h in both} == {platform, own}
    assert {h.source_id for h in platform_only} == {platform}
    # Row-level security shows the tenant the platform rows and its own, never B's.
    async with kit.db.tenant(a) as conn:
        visible = {r["id"] for r in await conn.fetch("SELECT id FROM agent.knowledge_sources")}
        chunks = {r["source_id"] for r in await conn.fetch("SELECT source_id FROM agent.knowledge_chunks")}
    assert visible == chunks == {platform, own}


async def test_a_knowledge_query_never_mixes_two_embedding_models(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    own = await kit.ingest(org, SAME_TEXT)
    platform = await kit.ingest(None, SAME_TEXT + " Platform edition.")
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    await reembed_source(kit.db, kit.store, own, kit.lookup(FAKE2))
    await reembed_source(kit.db, kit.store, platform, kit.lookup(FAKE2))
    # Both models now hold every chunk; a search reads one of them, the live one, and only it.
    args = {"include_platform": True, "include_organization": True, "limit": 50, "embedders": kit.lookup}
    before = await search(kit.db, org, "lifecycle stage", **args)  # type: ignore[arg-type]
    await flip_live_model(kit.db, org, FAKE2, drop_old=False)
    after = await search(kit.db, org, "lifecycle stage", **args)  # type: ignore[arg-type]
    assert len(before) == len(after) == 2
    assert {h.embedding_model for h in before} == {FAKE}
    assert {h.embedding_model for h in after} == {FAKE2}
    # A query vector of the other model is refused, not compared.
    stale = Vector((await kit.lookup(FAKE).embed(["lifecycle"]))[0])
    async with kit.db.connection() as conn:
        with pytest.raises(asyncpg.PostgresError, match="embedded with test/hash-64 but the live model"):
            await conn.fetch("SELECT * FROM knowledge_search($1, $2, 'x', true, true, 5, $3)", org, stale, FAKE)


async def test_an_object_backed_knowledge_source_has_the_same_per_organization_idempotency_boundary_as_a_uri_backed_source(  # noqa: E501
    kit: Kit, factory: Factory
) -> None:
    a = await factory.organization()
    b = await factory.organization()
    data = b"# Lifecycle\n\nlead, opportunity, customer"

    async def upload(org: UUID | None) -> UUID:
        registered = await register_upload(kit.db, kit.store, organization_id=org, data=data, filename="l.md")
        return registered.source_id

    async def uri(org: UUID | None) -> UUID:
        link = "https://x.example/l"
        return (await register_uri(kit.db, kit.store, organization_id=org, uri=link, data=data)).source_id

    for register in (upload, uri):
        # Twice in one organization, and twice in the platform scope: one source each.
        assert await register(a) == await register(a)
        assert await register(None) == await register(None)
        # The same document in another organization is another source.
        assert len({await register(a), await register(b), await register(None)}) == 3
    # The database holds the boundary for both kinds, platform rows included, whatever the code does.
    async with kit.db.connection() as conn:
        for org, uri_value in ((a, None), (None, None), (a, "https://x.example/l"), (None, "https://x.example/l")):
            with pytest.raises(asyncpg.UniqueViolationError, match="knowledge_sources_identity_key"):
                await conn.execute(
                    "INSERT INTO agent.knowledge_sources (organization_id, kind, title, uri, object_key, "
                    "content_sha256, byte_size) VALUES ($1, $2, 't', $3, 'k', encode(sha256($4), 'hex'), 1)",
                    org,
                    "uri" if uri_value else "upload",
                    uri_value,
                    data,
                )


async def test_a_chunk_inherits_tenancy_from_its_source_rather_than_storing_a_second_organization_field(
    kit: Kit, factory: Factory
) -> None:
    a = await factory.organization()
    b = await factory.organization()
    source = await kit.ingest(a, SAME_TEXT)
    async with kit.db.connection() as conn:
        columns = {
            r["column_name"]
            for r in await conn.fetch(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'agent' AND table_name = 'knowledge_chunks'"
            )
        }
    assert "organization_id" not in columns and "source_id" in columns
    args = {"include_organization": True, "embedders": kit.lookup}
    assert [h.source_id for h in await search(kit.db, a, "lifecycle", **args)] == [source]  # type: ignore[arg-type]
    # Move the source: its chunks follow it, in the search and behind row-level security alike.
    async with kit.db.connection() as conn:
        await conn.execute("UPDATE agent.knowledge_sources SET organization_id = $2 WHERE id = $1", source, b)
    assert await search(kit.db, a, "lifecycle", **args) == []  # type: ignore[arg-type]
    assert [h.source_id for h in await search(kit.db, b, "lifecycle", **args)] == [source]  # type: ignore[arg-type]
    async with kit.db.tenant(a) as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks") == 0
    async with kit.db.tenant(b) as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks") == 1


async def test_a_source_stuck_pending_is_failed_within_the_hour_and_the_admin_can_see_why(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    stuck = await kit.register(org, "a document whose ingestion job died")
    fresh = await kit.register(org, "a document being ingested right now")
    async with kit.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET pending_since = now() - interval '61 minutes' WHERE id = $1", stuck
        )
    swept = await sweep_pending(kit.db)  # the hourly cron: 61 minutes pending is failed on this run
    assert swept.failed_sources == (stuck,)
    views = {view.id: view for view in await list_sources(kit.db, org)}
    assert views[fresh].status == "pending"
    assert views[stuck].status == "failed"
    assert views[stuck].failure_reason is not None
    assert "did not finish within 1 hour" in views[stuck].failure_reason
    assert "Retry" in views[stuck].failure_reason


async def test_a_second_platform_row_in_knowledge_settings_is_refused_by_the_database(db: Database) -> None:
    async with db.connection() as conn:
        rows = await conn.fetch("SELECT organization_id, active_embedding_model FROM public.knowledge_settings")
        assert [tuple(r) for r in rows] == [(None, "local/wordllama-l2-supercat-256")]  # seeded: exactly one
        with pytest.raises(asyncpg.UniqueViolationError, match="knowledge_settings_organization_key"):
            await conn.execute(
                "INSERT INTO public.knowledge_settings (organization_id, active_embedding_model) "
                "VALUES (NULL, 'openai/text-embedding-3-small')"
            )
        assert await conn.fetchval("SELECT count(*) FROM public.knowledge_settings") == 1
