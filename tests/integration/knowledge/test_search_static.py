"""knowledge_search planned once per model (migrations/0107) answers exactly as 0103's dynamic statement did.

The dynamic function is rebuilt here from 0103's text (kept in knowledge_search_0103.sql since 0107 removed
it from the migration) under another name, in the test's database, and both are asked the same fixed
queries as the tenant, at a small tenant (a few ingested documents) and at a larger one (10,000 chunks,
where the dense half walks the HNSW index, and with the exact scan forced): the same chunks, in the same
order, with the same ranks, scores, floor measures and placements. A second test counts plans with
pg_stat_statements on a server of its own (bench/_planning_server.py): one plan of the statement over 100
calls.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import numpy as np
from pgvector import Vector

from bench._planning_server import install_dynamic_search
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

QUERIES = [
    "common topic",
    "term5 word3 topic17 filler",
    "renewal lifecycle of a customer contract",
    "word7",
    "nothing here answers zebra quasar",
    "topic",
]
"""Query texts: a common word, exact words of one chunk, prose, one rare word, no match, one frequent word."""

VARIANTS: dict[str, str] = {
    "default": "",
    "explain": ", p_explain => true",
    "exact": ", p_exact_below => 1000000",
    "exact_explain": ", p_exact_below => 1000000, p_explain => true",
    "capped": ", p_per_source => 1",
    "rrf": ", p_fusion => 'rrf'",
    "dense_only": ", p_dense_weight => 1, p_lexical_weight => 0",
    "lexical_only": ", p_dense_weight => 0, p_lexical_weight => 1",
    "floored": ", p_min_relevance => 0.2, p_keep_top => 2, p_keep_floor => 0.05, p_answer_cosine => 0.1",
    "shallow": ", p_lexical_depth => 5",
}
"""Named-argument tails: the plain search, explain mode, the exact dense scan, a cap, each fusion, the floors.

The HNSW walk runs where it runs in production, in a scope of at least p_exact_below (10,000) chunks: the
larger tenant. Forcing it on a smaller table (p_exact_below => 10 at 3,000 chunks) is no comparison: there
0103's custom plan sorts the whole table (exact) where the generic plan walks the index (approximate), and
the walk may miss a neighbour the sort finds (the decision: test_search_static_walk.py)."""

COLUMNS = "chunk_id, dense_rank, lexical_rank, dense_distance, lexical_score, score, cut, relevance, placed"


async def install_dynamic(db: Database) -> None:
    """0103's knowledge_search, as it was, under the name knowledge_search_dynamic."""
    async with db.connection() as conn:
        await install_dynamic_search(conn)


async def bulk_tenant(db: Database, org: UUID, *, chunks: int, sources: int) -> None:
    """`chunks` ready chunks of `org` over `sources` sources, with deterministic vectors and words."""
    per_source = chunks // sources
    async with db.connection() as conn:
        ids = [
            r["id"]
            for r in await conn.fetch(
                "INSERT INTO agent.knowledge_sources (organization_id, kind, title, object_key, content_sha256, "
                "byte_size, status, pending_since) SELECT $1, 'upload', 'bulk ' || n, 'k', "
                "md5(n::text) || md5(n::text), 1, 'ready', NULL FROM generate_series(1, $2) AS n RETURNING id",
                org,
                sources,
            )
        ]
        await conn.execute(
            "INSERT INTO agent.knowledge_source_models (source_id, embedding_model, status, chunk_count, "
            "embedded_count, pending_since) SELECT s, $2, 'ready', $3, $3, NULL FROM unnest($1::uuid[]) AS s",
            ids, FAKE, per_source,
        )  # fmt: skip
        await conn.execute(
            "INSERT INTO agent.knowledge_chunks (source_id, embedding_model, ordinal, text, tokens, embedding) "
            "SELECT s, $2, o, format('common term%s word%s topic%s filler renewal', o % 97, o % 13, (o * 7) % 501), "
            "7, (SELECT array_agg(sin(o * 0.37 + k * 1.3 + n * 0.11))::real[]::vector FROM generate_series(1, 64) k) "
            "FROM unnest($1::uuid[]) WITH ORDINALITY AS u (s, n) CROSS JOIN generate_series(0, $3 - 1) AS o",
            ids, FAKE, per_source,
        )  # fmt: skip
        await conn.execute("ANALYZE")


async def answers(kit: Kit, db: Database, org: UUID, function: str) -> dict[tuple[str, str], list[Any]]:
    """Every query under every variant, as the tenant in one session: the rows, in order."""
    vectors = [Vector(np.asarray(v)) for v in await kit.lookup(FAKE).embed(QUERIES)]
    found: dict[tuple[str, str], list[Any]] = {}
    async with db.connection() as conn, conn.transaction():
        await conn.execute("SET LOCAL ROLE ac_tenant")
        await conn.execute("SELECT set_config('app.organization_id', $1, true)", str(org))
        for name, tail in VARIANTS.items():
            sql = f"SELECT {COLUMNS} FROM public.{function}($1, $2, $3, true, true, 8{tail})"
            for text, vector in zip(QUERIES, vectors, strict=True):
                found[name, text] = [tuple(r) for r in await conn.fetch(sql, org, vector, text)]
    return found


async def assert_same(kit: Kit, db: Database, org: UUID) -> int:
    """The static and the dynamic function's answers are identical; the number of rows compared."""
    await install_dynamic(db)
    static = await answers(kit, db, org, "knowledge_search")
    dynamic = await answers(kit, db, org, "knowledge_search_dynamic")
    for key, rows in dynamic.items():
        assert static[key] == rows, key
    return sum(len(rows) for rows in dynamic.values())


async def test_the_static_search_answers_a_small_tenant_exactly_as_the_dynamic_one(
    kit: Kit, factory: Factory, db: Database
) -> None:
    org = await factory.organization()
    await kit.ingest(org, "# Renewals\n\nThe customer contract renewal lifecycle starts ninety days out.")
    await kit.ingest(org, "# Topics\n\nA common topic, word7 and term5, with filler.")
    await kit.ingest(None, "# Platform\n\nA platform page on the common topic of renewals.")
    assert await assert_same(kit, db, org) > 50


async def test_the_static_search_answers_a_tenant_of_10000_chunks_exactly_as_the_dynamic_one(
    kit: Kit, factory: Factory, db: Database
) -> None:
    org = await factory.organization()
    await bulk_tenant(db, org, chunks=10_000, sources=40)
    await kit.ingest(None, "# Platform\n\nA platform page on the common topic of renewals.")
    assert await assert_same(kit, db, org) > 300


async def test_the_search_statement_is_planned_once_over_100_calls_in_one_session() -> None:
    """pg_stat_statements' `plans` of the main statement stays at 1 over 100 calls in one session.

    On a server of the bench's own (bench/_planning_server.py: pg_stat_statements preloaded, planning
    tracked), a 500-chunk tenant, 100 searches per session of the static function and of 0103's dynamic one."""
    from bench.bench_search_planning import DYNAMIC, STATIC, measure

    result = await measure({"small": 500}, searches=100, rounds=1, terms=(6,), long_terms=None, embed=False)
    assert "pg_stat_statements" in result["shared_preload_libraries"]
    shape = result["shapes"]["small@6"]
    static, dynamic = shape["static_0107"], shape["dynamic_0103"]
    assert static["main_calls"] == 100 and static["main_plans_per_100"] == 1, (STATIC, static)
    assert static["lexemes_plans"] == 1, static  # the prologue's statement too
    assert dynamic["main_calls"] == 100 and dynamic["main_plans_per_100"] == 100, (DYNAMIC, dynamic)
