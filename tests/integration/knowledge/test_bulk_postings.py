"""The bulk postings path and the single-write trigger path keep the same BM25 postings and statistics.

The same documents go into two organizations: one by the bulk core (every source in one write, its
postings counted in one set-wise statement), one source at a time through the resumable steps (one
readiness flip per source). Every posting, scope row, lexeme row and listed pair of the two, keyed by
document and ordinal instead of ids, must be equal, and equal to a recount from the chunks; then the same
single-row changes (an unready and ready flip, a failed source, a rewritten chunk, a chunk added to a
ready source, a deleted source) applied to both keep them equal (migrations/0040, 0091), and so do the
source-level statistics (migrations/0092).
"""

from __future__ import annotations

import random
from typing import Any
from uuid import UUID

import asyncpg

from knowledge.ingestion.bulk import ingest_sources
from knowledge.ingestion.steps import mark_ready
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit
from tests.integration.knowledge.lexical import assert_consistent

_WORDS = (
    "boundary layer flow pressure gradient laminar turbulent shock wave supersonic wing heat transfer "
    "surface temperature velocity profile separation Reynolds number Mach cone jet nozzle thrust drag lift "
    "viscous inviscid stagnation point-wise cross-flow free-stream attached detached oscillation panel"
).split()

# Keyed by (document, ordinal): `Keyed` rows of one organization, ids replaced by what they stand for.
Keyed = dict[str, Any]

_POSTINGS = """
SELECT c.source_id, c.ordinal, sc.embedding_model, p.lexeme, p.tf, p.chunk_length, p.impact
  FROM agent.knowledge_postings p
  JOIN agent.knowledge_chunks c ON c.id = p.chunk_id
  JOIN agent.knowledge_lexical_scopes sc ON sc.id = p.scope_id
 WHERE sc.organization_id = $1
"""
# The postings as 0040 defines them, from the chunks of the organization's searchable pairs.
_RECOUNTED_POSTINGS = """
SELECT c.source_id, c.ordinal, c.embedding_model, u.lexeme, cardinality(u.positions) AS tf, len.n AS chunk_length,
       (cardinality(u.positions) * 2.2 / (cardinality(u.positions) + 1.2 * (0.25 + 0.75 * len.n / 64.0)))::real
         AS impact
  FROM agent.knowledge_chunks c
  JOIN agent.knowledge_sources s ON s.id = c.source_id
  JOIN agent.knowledge_source_models r ON r.source_id = c.source_id AND r.embedding_model = c.embedding_model
 CROSS JOIN LATERAL (SELECT sum(cardinality(x.positions))::integer AS n FROM unnest(c.fts) AS x) AS len
 CROSS JOIN LATERAL unnest(c.fts) AS u
 WHERE s.organization_id = $1 AND s.status = 'ready' AND r.status = 'ready'
"""
_SCOPES = "SELECT embedding_model, chunks, total_length FROM agent.knowledge_lexical_scopes WHERE organization_id = $1"
_LEXEMES = """
SELECT sc.embedding_model, l.lexeme, l.df
  FROM agent.knowledge_lexemes l JOIN agent.knowledge_lexical_scopes sc ON sc.id = l.scope_id
 WHERE sc.organization_id = $1
"""
_LISTED = """
SELECT sp.source_id, sp.embedding_model
  FROM agent.knowledge_searchable sp JOIN agent.knowledge_lexical_scopes sc ON sc.id = sp.scope_id
 WHERE sc.organization_id = $1
"""
# The source-level statistics (migrations/0092): per source its counted chunks and length, per source term
# its frequency, per lexeme its source frequency, per scope its sources and their total length.
_SOURCES = """
SELECT ls.source_id, sc.embedding_model, ls.chunks, ls.length
  FROM agent.knowledge_lexical_sources ls JOIN agent.knowledge_lexical_scopes sc ON sc.id = ls.scope_id
 WHERE sc.organization_id = $1
"""
_SOURCE_TERMS = """
SELECT st.source_id, sc.embedding_model, st.lexeme, st.tf
  FROM agent.knowledge_source_terms st JOIN agent.knowledge_lexical_scopes sc ON sc.id = st.scope_id
 WHERE sc.organization_id = $1
"""
_SOURCE_DF = """
SELECT sc.embedding_model, l.lexeme, l.source_df
  FROM agent.knowledge_lexemes l JOIN agent.knowledge_lexical_scopes sc ON sc.id = l.scope_id
 WHERE sc.organization_id = $1
"""
_SOURCE_SCOPES = """
SELECT embedding_model, sources, source_length FROM agent.knowledge_lexical_scopes WHERE organization_id = $1
"""
_CHUNKS = """
SELECT c.source_id, c.ordinal, c.text
  FROM agent.knowledge_chunks c JOIN agent.knowledge_sources s ON s.id = c.source_id
 WHERE s.organization_id = $1
"""


def _documents(count: int = 24, seed: int = 24) -> list[str]:
    """Seeded documents of one to four chunks, words repeated within and across them; one has no lexeme."""
    rng = random.Random(seed)
    docs = []
    for n in range(count - 1):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(40, 1300))]
        sentences = [" ".join(words[i : i + 12]).capitalize() + "." for i in range(0, len(words), 12)]
        docs.append(f"# Notes {n}\n\n" + " ".join(sentences) + "\n")
    docs.append("/// --- ///\n")  # a chunk with no English lexeme: no posting, not counted
    return docs


class _Org:
    """One organization's sources, by the index of the document each holds."""

    def __init__(self, organization_id: UUID, sources: list[UUID]) -> None:
        self.id = organization_id
        self.sources = sources
        self.index = {source: n for n, source in enumerate(sources)}

    async def rows(self, conn: asyncpg.Connection, sql: str) -> list[tuple[Any, ...]]:
        """`sql`'s rows for this organization, a source id replaced by its document's index, sorted."""
        rows = await conn.fetch(sql, self.id)
        return sorted(
            tuple(self.index[v] if isinstance(v, UUID) and v in self.index else v for v in r.values()) for r in rows
        )

    async def state(self, kit: Kit) -> Keyed:
        """Everything the statistics keep for this organization, keyed by document and ordinal."""
        async with kit.db.connection() as conn:
            return {
                "postings": await self.rows(conn, _POSTINGS),
                "scopes": await self.rows(conn, _SCOPES),
                "lexemes": await self.rows(conn, _LEXEMES),
                "listed": await self.rows(conn, _LISTED),
                "chunks": await self.rows(conn, _CHUNKS),
                "sources": await self.rows(conn, _SOURCES),
                "source_terms": await self.rows(conn, _SOURCE_TERMS),
                "source_df": await self.rows(conn, _SOURCE_DF),
                "source_scopes": await self.rows(conn, _SOURCE_SCOPES),
            }

    async def recounted_postings(self, kit: Kit) -> list[tuple[Any, ...]]:
        """The postings recomputed from the chunks of the organization's ready pairs."""
        async with kit.db.connection() as conn:
            return await self.rows(conn, _RECOUNTED_POSTINGS)


async def _bulk(kit: Kit, factory: Factory, docs: list[str]) -> _Org:
    org = await factory.organization()
    sources = [await kit.register(org, text) for text in docs]
    result = await ingest_sources(kit.db, kit.store, sources, embedders=kit.lookup, wave_documents=len(docs))
    assert result.count("ready") == len(docs)
    return _Org(org, sources)


async def _one_by_one(kit: Kit, factory: Factory, docs: list[str]) -> _Org:
    org = await factory.organization()
    sources = []
    for text in docs:
        source = await kit.embedded_pending(org, text)
        assert (await mark_ready(kit.db, source, FAKE)).ready
        sources.append(source)
    return _Org(org, sources)


async def _assert_same(kit: Kit, bulk: _Org, single: _Org) -> Keyed:
    stats = await bulk.state(kit)
    assert stats["postings"], "the documents wrote no postings"
    assert stats["source_terms"] and any(tf > 1 for *_, tf in stats["source_terms"]), "no source-level terms"
    assert stats == await single.state(kit), "the bulk path and the single-write path keep different statistics"
    assert stats["postings"] == await bulk.recounted_postings(kit), "the postings differ from a recount"
    await assert_consistent(kit.db)  # scope counts, lengths and document frequencies equal a recount
    return stats


async def _single_row_changes(kit: Kit, org: _Org) -> None:
    """The same row-level writes, in the same order, on either organization's copies of the documents."""
    flip, failed, rewritten, grown, deleted = (org.sources[n] for n in (1, 2, 3, 4, 5))
    async with kit.db.connection() as conn:
        for status in ("pending", "ready"):  # a readiness row unready, then ready again
            await conn.execute(
                "UPDATE agent.knowledge_source_models SET status = $2 WHERE source_id = $1 AND embedding_model = $3",
                flip,
                status,
                FAKE,
            )
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = 'x', pending_since = NULL "
            "WHERE id = $1",
            failed,
        )
        await conn.execute(
            "UPDATE agent.knowledge_chunks SET text = 'supersonic nozzle thrust, nozzle exit' "
            "WHERE source_id = $1 AND ordinal = 0",
            rewritten,
        )
        await conn.execute(
            "INSERT INTO agent.knowledge_chunks (source_id, embedding_model, ordinal, text, tokens, embedding) "
            "SELECT source_id, embedding_model, 100, 'laminar jet drag drag', 5, embedding "
            "  FROM agent.knowledge_chunks WHERE source_id = $1 AND ordinal = 0",
            grown,
        )
        await conn.execute("DELETE FROM agent.knowledge_sources WHERE id = $1", deleted)


async def test_the_bulk_path_and_the_single_write_path_keep_identical_postings_and_statistics(
    kit: Kit, factory: Factory
) -> None:
    docs = _documents()
    bulk = await _bulk(kit, factory, docs)
    single = await _one_by_one(kit, factory, docs)
    stats = await _assert_same(kit, bulk, single)
    assert max(ordinal for _, ordinal, _ in stats["chunks"]) >= 2  # documents of several chunks
    assert len(stats["listed"]) == len(docs)

    for org in (bulk, single):
        await _single_row_changes(kit, org)
    stats = await _assert_same(kit, bulk, single)
    assert len(stats["listed"]) == len(docs) - 2  # the failed source unlisted, the deleted one gone
