"""How often `knowledge_search`'s statement is planned (issue 45, item 1): pg_stat_statements per call.

`run()` starts an embedded PostgreSQL of its own that preloads pg_stat_statements (`bench._planning_server`),
migrates a scratch database, seeds one organization (`CHUNKS` ready chunks under the shipped model, random
unit vectors, Cranfield words) beside a small platform scope, then runs `SEARCHES` searches as the tenant in
one session (limit 8, both scopes, six-term queries) and reads back, for each statement the function runs
that pg_stat_statements counted: calls, plans, planning and execution time per call. Run it alone:
`.venv/bin/python -m bench.bench_search_planning [chunks]`. Nothing here asserts a timing.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from bench import _search_seed as seed
from bench._planning_server import planning_server, statement_counters
from bench._scratch import scratch_database
from state.migrate import MIGRATIONS_DIR, apply_migrations

SEARCHES = 100
CHUNKS = 3_000
SEARCH = "SELECT chunk_id FROM public.knowledge_search($1, $2, $3, true, true, 8)"


async def seed_tenant(conn: asyncpg.Connection, *, chunks: int, rng: np.random.Generator) -> uuid.UUID:
    """An organization with `chunks` ready chunks (sources of 50) and a platform scope of 200; its id."""
    vocabulary = seed.Vocabulary()
    org: uuid.UUID = await conn.fetchval("INSERT INTO public.organizations (name) VALUES ('bench') RETURNING id")
    await seed.seed_scope(conn, rng, vocabulary, None, sources=4, chunks_per_source=50, words=40, title="platform")
    await seed.seed_scope(
        conn, rng, vocabulary, org, sources=max(chunks // 50, 1), chunks_per_source=min(chunks, 50), words=40,
        title="tenant",
    )  # fmt: skip
    await conn.execute("ANALYZE")
    return org


async def measure(url: str, org: uuid.UUID, *, searches: int, rng: np.random.Generator) -> dict[str, Any]:
    """`searches` searches as the tenant on one connection; the statements' counters afterwards."""
    texts = seed.queries(rng, seed.Vocabulary(), 6, searches)
    vectors = [seed.unit_vector(rng) for _ in range(searches)]
    conn = await asyncpg.connect(url)
    try:
        from pgvector.asyncpg import register_vector

        await register_vector(conn)
        await conn.execute("SELECT pg_stat_statements_reset()")
        await conn.execute("SET ROLE ac_tenant")
        await conn.execute("SELECT set_config('app.organization_id', $1, false)", str(org))
        started = time.perf_counter()
        for text, vector in zip(texts, vectors, strict=True):
            await conn.fetch(SEARCH, org, vector, text)
        wall_ms = (time.perf_counter() - started) * 1000 / searches
        await conn.execute("RESET ROLE")
        rows = await statement_counters(conn, "knowledge")
    finally:
        await conn.close()
    statements = [
        {
            "head": r["head"],
            "toplevel": r["toplevel"],
            "calls": r["calls"],
            "plans": r["plans"],
            "plan_ms_per_call": round(r["total_plan_time"] / max(r["calls"], 1), 4),
            "exec_ms_per_call": round(r["total_exec_time"] / max(r["calls"], 1), 4),
        }
        for r in rows
    ]
    return {"searches": searches, "wall_ms_per_search": round(wall_ms, 3), "statements": statements}


async def run(chunks: int = CHUNKS, searches: int = SEARCHES, *, migrations: Path = MIGRATIONS_DIR) -> dict[str, Any]:
    """Seed, search, and report the planning counters (a JSON-able dict); `migrations` is the folder applied."""
    rng = np.random.default_rng(45)
    with tempfile.TemporaryDirectory(prefix="ac-plan-") as folder:
        async with planning_server(Path(folder)) as server, scratch_database(server, "ac_plan") as url:
            await apply_migrations(url, migrations)
            conn = await asyncpg.connect(url)
            try:
                preload = await conn.fetchval("SHOW shared_preload_libraries")
                if "pg_stat_statements" not in preload:  # DATABASE_URL's server may not preload it
                    return {"chunks": chunks, "shared_preload_libraries": preload, "statements": []}
                await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                from pgvector.asyncpg import register_vector

                await register_vector(conn)
                org = await seed_tenant(conn, chunks=chunks, rng=rng)
            finally:
                await conn.close()
            result = await measure(url, org, searches=searches, rng=rng)
    return {"chunks": chunks, "shared_preload_libraries": preload, **result}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(int(sys.argv[1]) if len(sys.argv) > 1 else CHUNKS)), indent=2))
