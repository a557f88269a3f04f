"""The BM25 statistics follow the states: ingestion, deletion, failure, a switchover; never pending chunks."""

from __future__ import annotations

from uuid import UUID

from knowledge.embedding.live_model import begin_switch, flip_live_model
from knowledge.search import Fusion, search
from knowledge.switchover import reembed_source
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, FAKE2, Kit
from tests.integration.knowledge.lexical import assert_consistent

LEXICAL = Fusion(dense=0.0, lexical=1.0)


async def test_statistics_follow_ingestion_and_deletion(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    first = await kit.ingest(org, "Lifecycle stages move a company from lead to customer.")
    await kit.ingest(org, "The lifecycle of an invoice ends when it is paid.")
    await kit.ingest(None, "Platform pages explain every lifecycle.")
    stats = await assert_consistent(kit.db)
    own = stats[(org, FAKE)]
    assert own["chunks"] == 2 and own["df"]["lifecycl"] == 2 and own["df"]["invoic"] == 1
    assert stats[(None, FAKE)]["df"]["lifecycl"] == 1
    assert own["total_length"] == 6 + 4  # English lexeme occurrences, stop words left out

    async with kit.db.connection() as conn:
        await conn.execute("DELETE FROM agent.knowledge_sources WHERE id = $1", first)
    stats = await assert_consistent(kit.db)
    assert stats[(org, FAKE)]["chunks"] == 1 and stats[(org, FAKE)]["df"]["lifecycl"] == 1
    assert "compani" not in stats[(org, FAKE)]["df"]

    async with kit.db.connection() as conn:
        await conn.execute("DELETE FROM public.organizations WHERE id = $1", org)
    stats = await assert_consistent(kit.db)
    assert (org, FAKE) not in stats and stats[(None, FAKE)]["chunks"] == 1


async def test_pending_and_failed_sources_never_count_and_are_never_returned(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    ready = await kit.ingest(org, "lifecycle of a ready document")
    # Pending, with every chunk embedded: the real steps, all but the last one (mark_ready).
    pending = await kit.embedded_pending(org, "lifecycle of a pending document whose chunks all hold vectors")
    # Failed after its chunks were written and embedded.
    failed = await kit.ingest(org, "lifecycle of a document that failed later")
    async with kit.db.connection() as conn:
        embedded = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1 AND embedding IS NOT NULL", pending
        )
    await kit.set_failed(failed)
    assert embedded == 1
    stats = await assert_consistent(kit.db)
    assert stats[(org, FAKE)]["chunks"] == 1 and stats[(org, FAKE)]["df"]["lifecycl"] == 1
    for fusion in (LEXICAL, Fusion(dense=1.0, lexical=0.0), Fusion()):
        hits = await search(kit.db, org, "lifecycle document", include_organization=True, fusion=fusion,
                            embedders=kit.lookup)  # fmt: skip
        assert {h.source_id for h in hits} == {ready}

    # A ready source whose readiness row leaves 'ready' (a re-embed reset) leaves the statistics too.
    async with kit.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_source_models SET status = 'pending', pending_since = now() WHERE source_id = $1",
            ready,
        )
    stats = await assert_consistent(kit.db)
    assert (org, FAKE) not in stats
    assert await search(kit.db, org, "lifecycle", include_organization=True, embedders=kit.lookup) == []
    # And back: the failed source retried and made ready again counts once.
    async with kit.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_source_models SET status = 'ready', pending_since = NULL WHERE source_id = $1",
            ready,
        )
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'ready', failure_reason = NULL WHERE id = $1", failed
        )
    stats = await assert_consistent(kit.db)
    assert stats[(org, FAKE)]["chunks"] == 2


async def _lexical_models(kit: Kit, org: UUID) -> set[str]:
    hits = await search(kit.db, org, "lifecycle", include_platform=True, include_organization=True, fusion=LEXICAL,
                        embedders=kit.lookup)  # fmt: skip
    assert hits
    return {h.embedding_model for h in hits}


async def test_statistics_follow_a_model_switchover_and_only_the_live_model_is_read(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    own = await kit.ingest(org, "Our lifecycle stage names: lead, customer.")
    platform = await kit.ingest(None, "A lifecycle stage is where a company stands.")
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    await reembed_source(kit.db, kit.store, own, kit.lookup(FAKE2))
    stats = await assert_consistent(kit.db)
    # The new model's chunks count under the new model only, and the search still reads the old one.
    assert stats[(org, FAKE2)]["chunks"] == 1 and stats[(org, FAKE)]["chunks"] == 1
    assert (None, FAKE2) not in stats
    assert await _lexical_models(kit, org) == {FAKE}

    await reembed_source(kit.db, kit.store, platform, kit.lookup(FAKE2))
    await flip_live_model(kit.db, org, FAKE2)
    stats = await assert_consistent(kit.db)
    assert (org, FAKE) not in stats  # the organization's old chunks were dropped with the flip
    assert stats[(org, FAKE2)]["chunks"] == 1 and stats[(None, FAKE2)]["chunks"] == 1
    assert stats[(None, FAKE)]["chunks"] == 1  # other tenants still search the platform's old-model chunks
    assert await _lexical_models(kit, org) == {FAKE2}


async def test_a_chunk_rewritten_in_a_ready_source_moves_the_statistics(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source = await kit.ingest(org, "lifecycle stages of a lead")
    async with kit.db.connection() as conn, conn.transaction():  # a re-sync swapping the chunks in one go
        await conn.execute("UPDATE agent.knowledge_chunks SET text = 'pipeline forecast' WHERE source_id = $1", source)
        await conn.execute(
            "INSERT INTO agent.knowledge_chunks (source_id, embedding_model, ordinal, text, tokens) "
            "VALUES ($1, $2, 1, 'pipeline owner', 3)",
            source,
            FAKE,
        )
    stats = await assert_consistent(kit.db)
    assert stats[(org, FAKE)]["df"] == {"pipelin": 2, "forecast": 1, "owner": 1}
    async with kit.db.connection() as conn:
        await conn.execute("DELETE FROM agent.knowledge_chunks WHERE source_id = $1 AND ordinal = 1", source)
    stats = await assert_consistent(kit.db)
    assert stats[(org, FAKE)]["df"] == {"pipelin": 1, "forecast": 1}
