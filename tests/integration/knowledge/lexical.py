"""Test helpers for the BM25 statistics: what the database keeps, and the same figures recomputed from scratch."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from state.db import Database

Stats = dict[tuple[UUID | None, str], dict[str, Any]]

_KEPT_SCOPES = """
SELECT organization_id, embedding_model, chunks, total_length FROM agent.knowledge_lexical_scopes WHERE chunks > 0
"""
_KEPT_LEXEMES = """
SELECT sc.organization_id, sc.embedding_model, l.lexeme, l.df
  FROM agent.knowledge_lexemes l JOIN agent.knowledge_lexical_scopes sc ON sc.id = l.scope_id
 WHERE l.df > 0
"""
# The definition, computed over the whole database: chunks of pairs whose source and readiness row are
# both ready, counted in their source's scope under their own model.
_COUNTED = """
WITH counted AS (
    SELECT c.id, s.organization_id, c.embedding_model, u.lexeme, cardinality(u.positions) AS tf
      FROM agent.knowledge_chunks c
      JOIN agent.knowledge_sources s ON s.id = c.source_id
      JOIN agent.knowledge_source_models r ON r.source_id = c.source_id AND r.embedding_model = c.embedding_model
     CROSS JOIN LATERAL unnest(c.fts) AS u
     WHERE s.status = 'ready' AND r.status = 'ready'
)
"""
_RECOMPUTED_SCOPES = (
    _COUNTED + "SELECT organization_id, embedding_model, count(DISTINCT id) AS chunks, sum(tf) AS total_length "
    "FROM counted GROUP BY organization_id, embedding_model"
)
_RECOMPUTED_LEXEMES = (
    _COUNTED + "SELECT organization_id, embedding_model, lexeme, count(*) AS df "
    "FROM counted GROUP BY organization_id, embedding_model, lexeme"
)


async def _read(db: Database, scopes_sql: str, lexemes_sql: str) -> Stats:
    async with db.connection() as conn:
        scopes = await conn.fetch(scopes_sql)
        lexemes = await conn.fetch(lexemes_sql)
    stats: Stats = {
        (r["organization_id"], r["embedding_model"]): {
            "chunks": r["chunks"],
            "total_length": r["total_length"],
            "df": {},
        }
        for r in scopes
    }
    for r in lexemes:
        stats[(r["organization_id"], r["embedding_model"])]["df"][r["lexeme"]] = r["df"]
    return stats


async def kept(db: Database) -> Stats:
    """The statistics the triggers keep, per (organization or None, model): chunks, total length, df."""
    return await _read(db, _KEPT_SCOPES, _KEPT_LEXEMES)


async def recomputed(db: Database) -> Stats:
    """The same statistics recomputed from the chunks and the states, as BM25 defines them."""
    return await _read(db, _RECOMPUTED_SCOPES, _RECOMPUTED_LEXEMES)


async def assert_consistent(db: Database, *, sources: bool = True) -> Stats:
    """The kept statistics equal the recomputed ones, and every posting belongs to a counted chunk; and, unless
    `sources` is false (a database migrated to before 0092), so do the source-level ones."""
    stats = await kept(db)
    assert stats == await recomputed(db)
    async with db.connection() as conn:
        stray = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_postings p WHERE NOT EXISTS ("
            " SELECT 1 FROM agent.knowledge_chunks c"
            " JOIN agent.knowledge_sources s ON s.id = c.source_id"
            " JOIN agent.knowledge_source_models r"
            " ON r.source_id = c.source_id AND r.embedding_model = c.embedding_model"
            " WHERE c.id = p.chunk_id AND s.status = 'ready' AND r.status = 'ready')"
        )
    assert stray == 0
    if sources:
        await assert_sources_consistent(db)
    return stats


# The source-level statistics (migrations/0092), per (organization, model) scope.
_KEPT_SOURCE_SCOPES = """
SELECT organization_id, embedding_model, sources, source_length FROM agent.knowledge_lexical_scopes WHERE sources > 0
"""
_KEPT_SOURCES = """
SELECT sc.organization_id, sc.embedding_model, ls.source_id, ls.chunks, ls.length
  FROM agent.knowledge_lexical_sources ls JOIN agent.knowledge_lexical_scopes sc ON sc.id = ls.scope_id
"""
_KEPT_SOURCE_TERMS = """
SELECT sc.organization_id, sc.embedding_model, st.source_id, st.lexeme, st.tf
  FROM agent.knowledge_source_terms st JOIN agent.knowledge_lexical_scopes sc ON sc.id = st.scope_id
"""
_KEPT_SOURCE_DF = """
SELECT sc.organization_id, sc.embedding_model, l.lexeme, l.source_df
  FROM agent.knowledge_lexemes l JOIN agent.knowledge_lexical_scopes sc ON sc.id = l.scope_id
 WHERE l.source_df > 0
"""
_KEPT_COUNTED_CHUNKS = """
SELECT sc.organization_id, sc.embedding_model, k.source_id, k.chunk_id, k.chunk_length
  FROM agent.knowledge_lexical_chunks k JOIN agent.knowledge_lexical_scopes sc ON sc.id = k.scope_id
"""
# The definition: a source's figures are the sums over its chunks that count (ready pair, one lexeme or more).
_COUNTED_CHUNKS = """
WITH counted AS (
    SELECT c.id, c.source_id, s.organization_id, c.embedding_model, u.lexeme, cardinality(u.positions) AS tf
      FROM agent.knowledge_chunks c
      JOIN agent.knowledge_sources s ON s.id = c.source_id
      JOIN agent.knowledge_source_models r ON r.source_id = c.source_id AND r.embedding_model = c.embedding_model
     CROSS JOIN LATERAL unnest(c.fts) AS u
     WHERE s.status = 'ready' AND r.status = 'ready'
)
"""
_RECOUNTED = {
    "scopes": _COUNTED_CHUNKS + "SELECT organization_id, embedding_model, count(DISTINCT source_id) AS sources, "
    "sum(tf) AS source_length FROM counted GROUP BY organization_id, embedding_model",
    "sources": _COUNTED_CHUNKS + "SELECT organization_id, embedding_model, source_id, count(DISTINCT id) AS chunks, "
    "sum(tf) AS length FROM counted GROUP BY organization_id, embedding_model, source_id",
    "terms": _COUNTED_CHUNKS + "SELECT organization_id, embedding_model, source_id, lexeme, sum(tf) AS tf "
    "FROM counted GROUP BY organization_id, embedding_model, source_id, lexeme",
    "source_df": _COUNTED_CHUNKS + "SELECT organization_id, embedding_model, lexeme, count(DISTINCT source_id) "
    "AS source_df FROM counted GROUP BY organization_id, embedding_model, lexeme",
    "chunks": _COUNTED_CHUNKS + "SELECT organization_id, embedding_model, source_id, id AS chunk_id, "
    "sum(tf) AS chunk_length FROM counted GROUP BY organization_id, embedding_model, source_id, id",
}
_KEPT = {
    "scopes": _KEPT_SOURCE_SCOPES,
    "sources": _KEPT_SOURCES,
    "terms": _KEPT_SOURCE_TERMS,
    "source_df": _KEPT_SOURCE_DF,
    "chunks": _KEPT_COUNTED_CHUNKS,
}

SourceStats = dict[str, list[tuple[Any, ...]]]


async def _rows(db: Database, queries: dict[str, str]) -> SourceStats:
    async with db.connection() as conn:
        return {
            name: sorted((tuple(r.values()) for r in await conn.fetch(sql)), key=repr) for name, sql in queries.items()
        }


async def kept_sources(db: Database) -> SourceStats:
    """The source-level statistics the functions keep: scope totals, sources, source terms, source df."""
    return await _rows(db, _KEPT)


async def recounted_sources(db: Database) -> SourceStats:
    """The same source-level statistics recounted from the chunks and the states."""
    return await _rows(db, _RECOUNTED)


async def assert_sources_consistent(db: Database) -> SourceStats:
    """Every source-level statistic equals its recount from the chunks of ready pairs."""
    stats = await kept_sources(db)
    recounted = await recounted_sources(db)
    for name in stats:
        assert stats[name] == recounted[name], f"source-level {name} differ from a recount"
    return stats
