"""Source-level BM25 statistics (migrations/0092) follow the states exactly as the chunk-level ones do.

Every step compares what the database keeps (per scope its sources and their total length, per source its
counted chunks and length, per source term its frequency, per lexeme its source frequency) with a recount
from the chunks of ready pairs (`assert_sources_consistent`), and checks the figures a step must move.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from knowledge.embedding.live_model import begin_switch, flip_live_model
from knowledge.ingestion.registration import register_uri
from knowledge.ingestion.steps import embed_batch, mark_ready, prepare_chunks
from knowledge.switchover import reembed_source
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, FAKE2, Kit
from tests.integration.knowledge.lexical import assert_consistent, assert_sources_consistent

# Three chunks at the fake's chunk size: the source's figures are sums over several chunks.
LONG = "# Nozzle notes\n\n" + "\n\n".join(
    f"## Part {n}\n\n" + "Supersonic nozzle thrust measured at the exit plane of the jet. " * 30 for n in range(3)
)
SHORT = "# Wing\n\nLaminar flow over the wing at low speed."


async def _scope(kit: Kit, org: UUID | None, model: str = FAKE) -> dict[str, Any]:
    async with kit.db.connection() as conn:
        row = await conn.fetchrow(
            "SELECT chunks, total_length, sources, source_length FROM agent.knowledge_lexical_scopes "
            "WHERE organization_id IS NOT DISTINCT FROM $1 AND embedding_model = $2",
            org,
            model,
        )
    return dict(row) if row else {"chunks": 0, "total_length": 0, "sources": 0, "source_length": 0}


async def _source(kit: Kit, source: UUID) -> list[tuple[str, int, int]]:
    async with kit.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT sc.embedding_model, ls.chunks, ls.length FROM agent.knowledge_lexical_sources ls "
            "JOIN agent.knowledge_lexical_scopes sc ON sc.id = ls.scope_id WHERE ls.source_id = $1 ORDER BY 1",
            source,
        )
    return [tuple(r.values()) for r in rows]


async def _source_df(kit: Kit, org: UUID | None, lexeme: str, model: str = FAKE) -> tuple[int, int]:
    async with kit.db.connection() as conn:
        row = await conn.fetchrow(
            "SELECT l.df, l.source_df FROM agent.knowledge_lexemes l "
            "JOIN agent.knowledge_lexical_scopes sc ON sc.id = l.scope_id "
            "WHERE sc.organization_id IS NOT DISTINCT FROM $1 AND sc.embedding_model = $2 AND l.lexeme = $3",
            org,
            model,
            lexeme,
        )
    return (row["df"], row["source_df"]) if row else (0, 0)


async def test_source_statistics_follow_ingestion_deletion_pending_and_failed_sources(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    long = await kit.ingest(org, LONG)
    short = await kit.ingest(org, SHORT)
    await assert_consistent(kit.db)  # chunk level and source level, against a recount
    scope = await _scope(kit, org)
    assert scope["chunks"] >= 4 and scope["sources"] == 2
    assert scope["source_length"] == scope["total_length"]  # every counted chunk belongs to one counted source
    [(_, chunks, _)] = await _source(kit, long)
    assert chunks >= 3
    df, source_df = await _source_df(kit, org, "nozzl")
    assert df > 1 and source_df == 1  # the chunk df counts chunks, the source df the one source

    pending = await kit.embedded_pending(org, SHORT + " Nozzle.")  # chunks and vectors, not ready
    failed = await kit.ingest(org, "A nozzle that failed.")
    await kit.set_failed(failed)
    await assert_sources_consistent(kit.db)
    assert await _source(kit, pending) == [] and await _source(kit, failed) == []
    assert (await _scope(kit, org))["sources"] == 2 and (await _source_df(kit, org, "nozzl"))[1] == 1

    assert (await mark_ready(kit.db, pending, FAKE)).ready  # the pending one becomes ready: it joins
    await assert_sources_consistent(kit.db)
    assert (await _scope(kit, org))["sources"] == 3 and (await _source_df(kit, org, "nozzl"))[1] == 2

    async with kit.db.connection() as conn:
        await conn.execute("DELETE FROM agent.knowledge_sources WHERE id = ANY ($1::uuid[])", [long, pending])
    await assert_sources_consistent(kit.db)
    assert await _source(kit, short) == [(FAKE, 1, 6)]  # wing laminar flow wing low speed
    assert await _scope(kit, org) == {"chunks": 1, "total_length": 6, "sources": 1, "source_length": 6}
    assert await _source_df(kit, org, "nozzl") == (0, 0)


async def test_source_statistics_follow_a_resync_and_a_rewritten_chunk(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    uri = "https://docs.example/nozzles"
    first = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=LONG.encode(),
                               media_type="text/markdown")  # fmt: skip
    await prepare_chunks(kit.db, kit.store, first.source_id, FAKE)
    await embed_batch(kit.db, first.source_id, kit.embedders[FAKE], batch_size=100)
    assert (await mark_ready(kit.db, first.source_id, FAKE)).ready
    before = await _scope(kit, org)
    assert before["sources"] == 1

    second = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=SHORT.encode(),
                                media_type="text/markdown")  # fmt: skip
    assert second.outcome == "resync"
    await prepare_chunks(kit.db, kit.store, second.source_id, FAKE)
    await embed_batch(kit.db, second.source_id, kit.embedders[FAKE], batch_size=100)
    await assert_sources_consistent(kit.db)
    assert await _scope(kit, org) == before  # the new version's chunks are pending: nothing moves yet
    assert (await mark_ready(kit.db, second.source_id, FAKE)).source_ready
    await assert_sources_consistent(kit.db)
    assert await _scope(kit, org) == {"chunks": 1, "total_length": 6, "sources": 1, "source_length": 6}
    assert await _source(kit, first.source_id) == []

    async with kit.db.connection() as conn:  # a chunk rewritten in place moves its source's figures
        await conn.execute(
            "UPDATE agent.knowledge_chunks SET text = 'nozzle nozzle thrust' WHERE source_id = $1", second.source_id
        )
    await assert_sources_consistent(kit.db)
    assert await _source(kit, second.source_id) == [(FAKE, 1, 3)]
    assert await _source_df(kit, org, "nozzl") == (1, 1)


async def test_source_statistics_follow_a_model_switch(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    own = await kit.ingest(org, LONG)
    platform = await kit.ingest(None, SHORT)
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    await reembed_source(kit.db, kit.store, own, kit.lookup(FAKE2))
    await assert_sources_consistent(kit.db)
    # Both models count the source, each in its own scope, while the switch runs.
    [(m1, chunks1, length1), (m2, chunks2, length2)] = await _source(kit, own)
    assert (m1, m2) == (FAKE2, FAKE) or (m1, m2) == (FAKE, FAKE2)
    assert (await _scope(kit, org, FAKE2))["sources"] == 1 and (await _scope(kit, org, FAKE))["sources"] == 1

    await reembed_source(kit.db, kit.store, platform, kit.lookup(FAKE2))
    await flip_live_model(kit.db, org, FAKE2)
    await assert_sources_consistent(kit.db)
    assert [m for m, *_ in await _source(kit, own)] == [FAKE2]  # the old model's figures left with its chunks
    assert (await _scope(kit, org, FAKE))["sources"] == 0
    assert (await _scope(kit, None, FAKE))["sources"] == 1  # other tenants still read the platform's old model
    assert chunks1 >= 1 and chunks2 >= 1 and length1 > 0 and length2 > 0
