"""The starving shape of issue 21: one tenant's chunks repeat another's queries; is the other's dense half whole?

`run()` starts its own embedded PostgreSQL in a temporary folder (or uses DATABASE_URL's server), builds a
fresh database from the migrations and returns a JSON-able dict:

- before: organization C alone, 31,500 chunks (315 sources of 100 chunks of 50 words, WordLlama vectors of
  their texts, the HNSW index built after the load). For 12 six-term queries: C's dense candidates from
  `knowledge_search` (dense-only fusion, as many hits as candidates, as the tenant) against an exact scan
  of C's ready chunks written apart from the function (recall@32 and @80, and in how many queries the two
  lists are identical, same ids in the same order, of all and of those whose walk came back short); how
  many rows the HNSW walk alone returns under the function's scan settings (the dense half before
  0071's fallback, its `dense_walk`), and its recall; and `knowledge_search` p50/p95 as the tenant with the
  shipped fusion (both scopes, limit 8), dense-only p50/p95 beside it.
- after: organization D writes 60,000 chunks into the live index, each a copy of one of C's 12 queries
  (its text and its vector), as in the issue; the same figures for C, and D's own search p50/p95.
- walk_settings: after D's write, the walk alone under pgvector's scan settings the issue tried (iterative
  scan order, hnsw.max_scan_tuples, hnsw.scan_mem_multiplier, hnsw.ef_search): rows returned of 80,
  recall@80 against the exact scan, p50.

Nothing here asserts a timing.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector import Vector

from bench import _search_seed as seed
from bench._scratch import bench_server, scratch_database
from bench.bench_search import _embed, _query_vectors, _report, _timed_search
from knowledge.search import Fusion
from state.db import Database
from state.migrate import apply_migrations
from state.settings import load_settings

QUERIES = 12
"""Six-term queries of C's vocabulary; D's chunks repeat them."""
DENSE_ONLY = Fusion(dense=1.0, lexical=0.0)
CANDIDATES = (32, 80)
"""Dense candidate counts measured: a default search's (4 x limit 8) and the issue's (4 x limit 20)."""

DENSE = (
    "SELECT chunk_id FROM public.knowledge_search($1, $2, '', false, true, $3, p_candidates => $3, "
    "p_dense_weight => 1, p_lexical_weight => 0) ORDER BY dense_rank"
)
EXACT = (
    "SELECT c.id FROM agent.knowledge_chunks c "
    "JOIN agent.knowledge_sources s ON s.id = c.source_id "
    "JOIN agent.knowledge_source_models r ON r.source_id = c.source_id AND r.embedding_model = c.embedding_model "
    "WHERE s.organization_id = $1 AND s.status = 'ready' AND r.status = 'ready' AND c.embedding_model = $4 "
    "ORDER BY (c.embedding::vector(256)) <=> $2::vector(256), c.id LIMIT $3"
)
WALK = (
    "SELECT c.id FROM agent.knowledge_chunks c WHERE c.embedding_model = 'local/wordllama-l2-supercat-256' "
    "AND (SELECT sp.scope_id FROM agent.knowledge_searchable sp WHERE sp.source_id = c.source_id "
    "AND sp.embedding_model = 'local/wordllama-l2-supercat-256') = ANY ($2) "
    "ORDER BY (c.embedding::vector(256)) <=> $1::vector(256) LIMIT $3"
)
"""The dense walk of knowledge_search (`dense_walk` in migrations/0071, before its fallback), run alone."""
QUERY_SCOPES = "SELECT id FROM agent.knowledge_lexical_scopes WHERE organization_id = $1"

Setting = tuple[str, int, int, int]
SETTINGS: list[Setting] = [
    ("relaxed_order", 20_000, 1, 200),  # the function's own
    ("strict_order", 20_000, 1, 200),
    ("relaxed_order", 100_000, 10, 200),
    ("relaxed_order", 1_000_000, 100, 200),
    ("relaxed_order", 20_000, 1, 1000),
    ("strict_order", 1_000_000, 100, 1000),
]
"""(hnsw.iterative_scan, hnsw.max_scan_tuples, hnsw.scan_mem_multiplier, hnsw.ef_search) tried on the walk."""


def run() -> dict[str, Any]:
    return asyncio.run(_run())


async def _run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-bench-starving-") as tmp, bench_server(Path(tmp)) as server:
        async with scratch_database(server, "ac_bench_starving") as url:
            await apply_migrations(url)
            db = await Database.open(load_settings(pool_min_size=2, pool_max_size=8), url=url, migrate=False)
            try:
                return await _measure(db)
            finally:
                await db.close()


async def _measure(db: Database) -> dict[str, Any]:
    vocabulary = seed.Vocabulary()
    c, d = uuid.uuid4(), uuid.uuid4()
    texts = seed.queries(np.random.default_rng(5), vocabulary, 6, QUERIES)
    vectors = await _query_vectors(texts)
    result: dict[str, Any] = {"model": seed.MODEL, "seed": {}}
    async with db.connection() as conn:
        await conn.execute("INSERT INTO public.organizations (id, name) VALUES ($1, 'C'), ($2, 'D')", c, d)
        await seed.drop_index(conn)
        started = time.perf_counter()
        result["seed"]["c_chunks"] = await seed.seed_scope(
            conn, np.random.default_rng(42), vocabulary, c, sources=315, chunks_per_source=100, words=50,
            title="C", embed=_embed,
        )  # fmt: skip
        result["seed"]["c_copy_s"] = round(time.perf_counter() - started, 1)
        result["seed"]["hnsw_build_and_analyze_s"] = round(await seed.build_index(conn), 1)
    result["before"] = _report("before", await _tenant_figures(db, c, texts, vectors))
    async with db.connection() as conn:
        started = time.perf_counter()
        result["seed"]["d_chunks_repeating_c_queries"] = await seed.seed_repeats(
            conn, d, texts, vectors, sources=60, chunks_per_source=1000, title="D"
        )
        await conn.execute("VACUUM (ANALYZE)")
        result["seed"]["d_write_into_live_index_s"] = round(time.perf_counter() - started, 1)
    _report("seed", result["seed"])
    result["after"] = _report("after", await _tenant_figures(db, c, texts, vectors))
    result["after"]["d_knowledge_search_as_tenant_ms"], _ = await _timed_search(db, d, texts)
    result["walk_settings"] = _report("walk_settings", await _walk_settings(db, c, vectors))
    return result


async def _tenant_figures(db: Database, org: uuid.UUID, texts: list[str], vectors: list[Vector]) -> dict[str, Any]:
    """Dense recall against the exact scan, the walk's rows, and search timings, for one tenant."""
    out: dict[str, Any] = {}
    async with db.connection() as conn:
        scopes = [r["id"] for r in await conn.fetch(QUERY_SCOPES, org)]
        for k in CANDIDATES:
            exact = [await _exact(conn, org, v, k) for v in vectors]
            walked = [await _walk(conn, scopes, v, k) for v in vectors]
            got = []
            for v in vectors:
                async with db.tenant(org) as tenant:
                    got.append([r["chunk_id"] for r in await tenant.fetch(DENSE, org, v, k)])
            out[f"k_{k}"] = {
                f"dense_recall@{k}": _recall(got, exact),
                "identical_to_exact_scan": f"{sum(g == e for g, e in zip(got, exact, strict=True))} of {len(got)}",
                "identical_where_the_walk_came_back_short": _identical_where_short(got, exact, walked, k),
                "walk_alone_rows": [len(w) for w in walked],
                "walk_alone_recall": _recall(walked, exact),
                "queries_with_no_walk_row": sum(not w for w in walked),
            }
    out["knowledge_search_as_tenant_ms"], out["mean_hits_of_8"] = await _timed_search(db, org, texts)
    out["dense_only_as_tenant_ms"], _ = await _timed_search(db, org, texts, fusion=DENSE_ONLY, rounds=30)
    return out


async def _exact(conn: asyncpg.Connection, org: uuid.UUID, vector: Vector, k: int) -> list[int]:
    async with conn.transaction():
        await conn.execute("SET LOCAL enable_indexscan = off")
        return [r["id"] for r in await conn.fetch(EXACT, org, vector, k, seed.MODEL)]


async def _walk(
    conn: asyncpg.Connection, scopes: list[int], vector: Vector, k: int, settings: Setting | None = None
) -> list[int]:
    """The walk alone under `settings` (default: the function's own)."""
    order, tuples, memory, ef = settings or SETTINGS[0]
    async with conn.transaction():
        await conn.execute(f"SET LOCAL hnsw.iterative_scan = {order}")
        await conn.execute(f"SET LOCAL hnsw.max_scan_tuples = {int(tuples)}")
        await conn.execute(f"SET LOCAL hnsw.scan_mem_multiplier = {int(memory)}")
        await conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
        return [r["id"] for r in await conn.fetch(WALK, vector, scopes, k)]


def _identical_where_short(got: list[list[int]], exact: list[list[int]], walked: list[list[int]], k: int) -> str:
    """Of the queries whose walk alone returned fewer than `k` rows, how many got exactly the exact scan's list."""
    short = [(g, e) for g, e, w in zip(got, exact, walked, strict=True) if len(w) < k]
    return f"{sum(g == e for g, e in short)} of {len(short)}"


def _recall(got: list[list[int]], exact: list[list[int]]) -> float:
    return round(float(np.mean([len(set(g) & set(e)) / len(e) for g, e in zip(got, exact, strict=True)])), 3)


async def _walk_settings(db: Database, org: uuid.UUID, vectors: list[Vector]) -> dict[str, Any]:
    """The walk alone after D's write, under each scan setting: rows of 80, recall@80, p50."""
    out: dict[str, Any] = {}
    async with db.connection() as conn:
        scopes = [r["id"] for r in await conn.fetch(QUERY_SCOPES, org)]
        exact = [await _exact(conn, org, v, 80) for v in vectors]
        for settings in SETTINGS:
            walked, times = [], []
            for v in vectors:
                started = time.perf_counter()
                walked.append(await _walk(conn, scopes, v, 80, settings))
                times.append((time.perf_counter() - started) * 1000)
            order, tuples, memory, ef = settings
            out[f"{order}_tuples_{tuples}_mem_x{memory}_ef_{ef}"] = {
                "rows_of_80": [len(w) for w in walked],
                "recall@80": _recall(walked, exact),
                "p50_ms": round(float(np.median(times)), 2),
            }
    return out
