"""Migration 0061: what a bulk write pays for; the BM25 statistics of bulk writes across scopes and moves."""

from __future__ import annotations

from knowledge.ingestion.bulk import ingest_sources
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit
from tests.integration.knowledge.lexical import assert_consistent


async def test_no_index_on_the_chunks_tsvector_and_the_postings_keep_the_two_the_search_reads(kit: Kit) -> None:
    async with kit.db.connection() as conn:
        chunk_indexes = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'agent' AND tablename = 'knowledge_chunks'"
        )
        postings = {
            r["indexname"]: r["indexdef"]
            for r in await conn.fetch(
                "SELECT indexname, indexdef FROM pg_indexes "
                "WHERE schemaname = 'agent' AND tablename = 'knowledge_postings'"
            )
        }
    assert [r["indexname"] for r in chunk_indexes if "fts" in r["indexdef"]] == []
    assert postings["knowledge_postings_pkey"].endswith("USING btree (chunk_id, lexeme)")
    assert postings["knowledge_postings_list_idx"].endswith(
        "USING btree (scope_id, lexeme, impact DESC, chunk_id) INCLUDE (tf, chunk_length)"
    )


async def test_sources_of_three_scopes_made_ready_in_one_statement_count_in_their_own_scopes(
    kit: Kit, factory: Factory
) -> None:
    first, second = await factory.organization(), await factory.organization()
    ids = [
        await kit.register(first, "lifecycle of a lead"),
        await kit.register(second, "lifecycle of an invoice"),
        await kit.register(None, "platform lifecycle pages"),
        await kit.register(first, "invoice lifecycle for the first organization"),
    ]
    result = await ingest_sources(kit.db, kit.store, ids, embedders=kit.lookup)
    assert result.count("ready") == 4
    stats = await assert_consistent(kit.db)
    assert stats[(first, FAKE)]["chunks"] == 2 and stats[(first, FAKE)]["df"]["lifecycl"] == 2
    assert stats[(second, FAKE)]["chunks"] == 1 and stats[(None, FAKE)]["chunks"] == 1
    async with kit.db.connection() as conn:
        scopes = await conn.fetchval("SELECT count(*) FROM agent.knowledge_lexical_scopes")
    assert scopes == 3


async def test_a_source_moved_to_another_organization_moves_its_statistics(kit: Kit, factory: Factory) -> None:
    first, second = await factory.organization(), await factory.organization()
    source = await kit.ingest(first, "lifecycle of a moving document")
    await kit.ingest(second, "an invoice stays")
    async with kit.db.connection() as conn:
        await conn.execute("UPDATE agent.knowledge_sources SET organization_id = $1 WHERE id = $2", second, source)
    stats = await assert_consistent(kit.db)
    assert (first, FAKE) not in stats
    assert stats[(second, FAKE)]["chunks"] == 2 and stats[(second, FAKE)]["df"]["lifecycl"] == 1


async def test_moves_between_pending_and_failed_count_nothing_and_ready_again_counts_once(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    ready = await kit.ingest(org, "lifecycle of a ready document")
    other = await kit.register(org, "lifecycle of a document that fails, then is retried")
    await kit.set_failed(other)
    async with kit.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'pending', failure_reason = NULL, pending_since = now() "
            "WHERE id = $1",
            other,
        )
    assert (await assert_consistent(kit.db))[(org, FAKE)]["chunks"] == 1
    await ingest_sources(kit.db, kit.store, [other, ready], embedders=kit.lookup)
    stats = await assert_consistent(kit.db)
    assert stats[(org, FAKE)]["chunks"] == 2 and stats[(org, FAKE)]["df"]["lifecycl"] == 2
