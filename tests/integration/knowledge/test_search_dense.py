"""No tenant starves another's dense half: a short HNSW walk is replaced by the exact scan of the caller's scope.

The starving shape of issue 21: organization D writes many chunks repeating organization C's query vectors
exactly, so the walk of the model's shared HNSW index lands among D's copies and comes back with none of
C's chunks. C's dense candidates must still be what an exact scan of C's own scope returns. The vectors are
written straight to the table (seeded unit vectors of the 64-dimension fake model), and `p_exact_below => 0`
makes C's small scope take the index path a large tenant takes by default.
"""

from __future__ import annotations

import re
from uuid import UUID

import asyncpg
import numpy as np
from pgvector import Vector

from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit, unit

CANDIDATES = 20
"""The candidate count of the dense half in these tests (p_limit = p_candidates)."""

DENSE = (
    "SELECT chunk_id, source_organization_id, dense_rank FROM public.knowledge_search($1, $2, '', false, true, $3, "
    "p_candidates => $3, p_exact_below => $4, p_dense_weight => 1, p_lexical_weight => 0) ORDER BY dense_rank"
)
"""The function's dense candidates, best first: dense-only fusion, as many hits as candidates."""

EXACT = (
    "SELECT c.id FROM agent.knowledge_chunks c "
    "JOIN agent.knowledge_sources s ON s.id = c.source_id "
    "JOIN agent.knowledge_source_models r ON r.source_id = c.source_id AND r.embedding_model = c.embedding_model "
    "WHERE s.organization_id = $1 AND s.status = 'ready' AND r.status = 'ready' AND c.embedding_model = 'test/hash-64' "
    "ORDER BY (c.embedding::vector(64)) <=> $2::vector(64), c.id LIMIT $3"
)
"""The reference: an exact scan of one organization's ready chunks, written apart from the function."""


async def _write(db: Database, org: UUID, vectors: list[np.ndarray], *, per_source: int, text: str) -> None:
    """Ready sources of `per_source` chunks holding `vectors`, written straight to the tables."""
    sources = -(-len(vectors) // per_source)
    async with db.connection() as conn:
        created = await conn.fetch(
            "INSERT INTO agent.knowledge_sources (organization_id, kind, title, object_key, content_sha256, "
            "byte_size, status, pending_since) SELECT $1, 'upload', $3 || n, 'k', md5($3 || n) || md5(n::text), "
            "1, 'ready', NULL FROM generate_series(1, $2) AS n RETURNING id",
            org, sources, text,
        )  # fmt: skip
        ids = [r["id"] for r in created]
        await conn.copy_records_to_table(
            "knowledge_chunks", schema_name="agent",
            records=[(ids[i // per_source], FAKE, i % per_source, f"{text} {i}", 3, Vector(v))
                     for i, v in enumerate(vectors)],
            columns=["source_id", "embedding_model", "ordinal", "text", "tokens", "embedding"],
        )  # fmt: skip
        await conn.execute(
            "INSERT INTO agent.knowledge_source_models (source_id, embedding_model, status, chunk_count, "
            "embedded_count, pending_since) SELECT s, $2, 'ready', n, n, NULL FROM ("
            "SELECT source_id AS s, count(*)::integer AS n FROM agent.knowledge_chunks "
            "WHERE source_id = ANY ($1::uuid[]) GROUP BY source_id) AS t",
            ids, FAKE,
        )  # fmt: skip


async def _starving_shape(db: Database, factory: Factory) -> tuple[UUID, UUID, list[Vector]]:
    """C: 240 chunks of seeded random vectors. D: 7,200 chunks, 2,400 exact copies of each of C's 3 queries.

    pgvector keeps up to ten copies in one graph element, so each query's copies make 240 elements: more
    than the walk's ef_search (200), so the walk's whole candidate list is D's copies at distance 0.
    """
    c, d = await factory.organization("C"), await factory.organization("D")
    queries = [unit(64, 90_000 + q) for q in range(3)]
    await _write(db, c, [unit(64, i) for i in range(240)], per_source=40, text="c")
    await _write(db, d, [queries[i % len(queries)] for i in range(7200)], per_source=600, text="d")
    async with db.connection() as conn:
        await conn.execute("VACUUM (ANALYZE) agent.knowledge_chunks")
    return c, d, [Vector(q) for q in queries]


async def _dense_plan(
    db: Database, org: UUID, query: Vector, *, exact_below: int
) -> tuple[list[asyncpg.Record], dict[str, str]]:
    """The function's dense candidates as the tenant, and the executed plan of each dense CTE (auto_explain).

    Sequential scans and sorts are priced out, as on a table large enough for the planner to walk the index
    by itself (these tables hold a few thousand rows): the walk then always reads the HNSW index.
    """
    messages: list[str] = []

    def listener(_conn: object, message: object) -> None:
        messages.append(str(getattr(message, "message", message)))

    async with db.connection() as conn, conn.transaction():
        await conn.execute("LOAD 'auto_explain'")
        for setting, value in (("log_min_duration", "0"), ("log_analyze", "on"), ("log_nested_statements", "on"),
                               ("log_level", "notice")):  # fmt: skip
            await conn.execute(f"SET LOCAL auto_explain.{setting} = '{value}'")
        for scan in ("seqscan", "sort"):
            await conn.execute(f"SET LOCAL enable_{scan} = off")
        await conn.execute("SET LOCAL ROLE ac_tenant")  # as the tenant: row-level security is the second wall
        await conn.execute("SELECT set_config('app.organization_id', $1, true)", str(org))
        conn.add_log_listener(listener)
        try:
            rows = await conn.fetch(DENSE, org, query, CANDIDATES, exact_below)
        finally:
            conn.remove_log_listener(listener)
    plan = next(m for m in messages if "WITH dense_walk" in m)
    sections: dict[str, str] = {}
    for name, following in (("dense_walk", "CTE dense_exact"), ("dense_exact", "CTE dense\n")):
        start = plan.index(f"CTE {name}\n")
        sections[name] = plan[start : plan.index(following, start)]
    return rows, sections


def _rows(section: str) -> int:
    """The rows the top node of a CTE's plan section returned."""
    found = re.search(r"actual time=\S+ rows=(\d+)", section.splitlines()[1])
    assert found, section
    return int(found.group(1))


async def test_a_tenant_repeating_anothers_queries_leaves_its_dense_half_equal_to_its_exact_scan(
    kit: Kit, factory: Factory, db: Database
) -> None:
    c, _d, queries = await _starving_shape(db, factory)
    for query in queries:
        async with db.connection() as conn, conn.transaction():
            await conn.execute("SET LOCAL enable_indexscan = off")  # the reference never touches the index
            exact = [r["id"] for r in await conn.fetch(EXACT, c, query, CANDIDATES)]
        rows, plan = await _dense_plan(db, c, query, exact_below=0)
        assert len(exact) == CANDIDATES
        assert [r["chunk_id"] for r in rows] == exact  # same ids, same order
        assert [r["dense_rank"] for r in rows] == list(range(1, CANDIDATES + 1))
        assert {r["source_organization_id"] for r in rows} == {c}
        # With the HNSW index present and walked: the walk came back short (D's copies are all it found),
        # and the exact scan of C's scope answered instead.
        assert "knowledge_chunks_hnsw_test_hash_64" in plan["dense_walk"]
        assert _rows(plan["dense_walk"]) < CANDIDATES
        assert _rows(plan["dense_exact"]) == CANDIDATES


async def test_a_walk_that_fills_its_candidates_never_starts_the_exact_scan_and_a_small_scope_never_walks(
    kit: Kit, factory: Factory, db: Database
) -> None:
    org, other = await factory.organization(), await factory.organization()
    await _write(db, org, [unit(64, i) for i in range(400)], per_source=50, text="own")
    await _write(db, other, [unit(64, 10_000 + i) for i in range(400)], per_source=50, text="other")
    async with db.connection() as conn:
        await conn.execute("VACUUM (ANALYZE) agent.knowledge_chunks")
    query = Vector(unit(64, 99_999))
    walked, plan = await _dense_plan(db, org, query, exact_below=0)
    assert len(walked) == CANDIDATES
    assert "knowledge_chunks_hnsw_test_hash_64" in plan["dense_walk"]
    assert _rows(plan["dense_walk"]) == CANDIDATES  # the walk answered
    scans = [line for line in plan["dense_exact"].splitlines() if "knowledge_searchable" in line and "Scan" in line]
    assert scans and all("never executed" in line for line in scans), plan["dense_exact"]
    exact, plan = await _dense_plan(db, org, query, exact_below=10_000)  # 400 chunks: a small scope
    walk = [line for line in plan["dense_walk"].splitlines() if "knowledge_chunks_hnsw_test_hash_64" in line]
    assert walk and all("never executed" in line for line in walk), plan["dense_walk"]
    assert _rows(plan["dense_exact"]) == CANDIDATES
    assert len(exact) == CANDIDATES and {r["source_organization_id"] for r in exact} == {org}
