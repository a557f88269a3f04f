"""The dense walk's recall@10 against the exact scan at the big tenant of `make bench`, per HNSW build.

`python -m bench.hnsw_walk_recall [--builds m:ef_construction ...]`: seeds the big-tenant shape of
`bench/bench_search.py` (one organization of 100,000 WordLlama-embedded chunks over 1,000 sources, 20
look-alike tenants of 1,000 chunks, 1,000 platform chunks), then per build (default the project's
pgvector defaults, m 16 / ef_construction 64) rebuilds the model's partial index with those settings and
measures, over 20 of the bench's 6-term queries, the walk's recall@10 against the exact scan and its
median time per hnsw.ef_search, as the search calls it (iterative scan relaxed_order, the tenant's
scopes). Writes JSON on stdout. Not part of `make bench` (one input to the decision on the dense half,
docs/decisions.md). Nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector import Vector

from bench import _search_seed as seed
from knowledge.embedding.registry import get_embedder
from knowledge.ingestion.pool import shared_pool
from state.db import Database
from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
from state.migrate import apply_migrations
from state.settings import load_settings

DENSE = (
    "SELECT chunk_id FROM public.knowledge_search($1, $2, '', false, true, 10, p_exact_below => $3, "
    "p_ef_search => $4, p_lexical_weight => 0, p_dense_weight => 1)"
)


async def _embed(texts: list[str]) -> np.ndarray:
    return await shared_pool().embed(get_embedder(seed.MODEL), texts)


async def _seed(db: Database) -> uuid.UUID:
    rng = np.random.default_rng(42)
    vocabulary = seed.Vocabulary()
    big, others = uuid.uuid4(), [uuid.uuid4() for _ in range(20)]
    async with db.connection() as conn:
        await conn.copy_records_to_table(
            "organizations", schema_name="public", columns=["id", "name"],
            records=[(big, "big"), *((o, f"look-alike {i}") for i, o in enumerate(others))],
        )  # fmt: skip
        await seed.drop_index(conn)
        for n in range(10):
            await seed.seed_scope(conn, rng, vocabulary, big, sources=100, chunks_per_source=100, words=50,
                                  embed=_embed, title=f"big {n}")  # fmt: skip
            print(f"-- big {n + 1}/10", file=sys.stderr, flush=True)
        for org in others:
            await seed.seed_scope(conn, rng, vocabulary, org, sources=10, chunks_per_source=100, words=50,
                                  embed=_embed, title="look-alike")  # fmt: skip
        await seed.seed_scope(conn, rng, vocabulary, None, sources=10, chunks_per_source=100, words=50,
                              embed=_embed, title="platform")  # fmt: skip
    return big


async def _rebuild(db: Database, m: int, ef_construction: int) -> float:
    """Rebuild the model's partial HNSW index with these settings (same expression and predicate)."""
    async with db.connection() as conn:
        name = await conn.fetchval("SELECT index_name FROM agent.embedding_models WHERE model_id = $1", seed.MODEL)
        definition = await conn.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'agent' AND indexname = $1", name
        )
        if definition is None:
            await seed.build_index(conn)
            definition = await conn.fetchval(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = 'agent' AND indexname = $1", name
            )
        started = time.perf_counter()
        await conn.execute(f'DROP INDEX agent."{name}"')
        await conn.execute("SET maintenance_work_mem = '512MB'")
        built = re.sub(r"\s+WITH \([^)]*\)", "", definition).replace(
            " WHERE ", f" WITH (m = {m}, ef_construction = {ef_construction}) WHERE ", 1
        )
        await conn.execute(built)
        await conn.execute("VACUUM (ANALYZE) agent.knowledge_chunks")
        return time.perf_counter() - started


async def _recall(db: Database, org: uuid.UUID, vectors: list[Vector]) -> dict[str, Any]:
    async with db.tenant(org) as conn:
        exact = [{r["chunk_id"] for r in await conn.fetch(DENSE, org, v, 10**9, None)} for v in vectors]
    out: dict[str, Any] = {}
    for ef in (80, 200, 400):
        recalls, times = [], []
        for v, truth in zip(vectors, exact, strict=True):
            started = time.perf_counter()
            async with db.tenant(org) as conn:
                got = {r["chunk_id"] for r in await conn.fetch(DENSE, org, v, 0, ef)}
            times.append((time.perf_counter() - started) * 1000)
            recalls.append(len(got & truth) / len(truth))
        out[f"ef_{ef}"] = {
            "recall@10": round(float(np.mean(recalls)), 3),
            "median_ms": round(float(np.median(times)), 2),
        }
    return out


async def main(builds: list[tuple[int, int]]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-bench-walk-") as tmp:
        server = embedded_server_url(Path(tmp))
        name = f"ac_bench_walk_{uuid.uuid4().hex[:8]}"
        admin = await asyncpg.connect(server)
        await admin.execute(f'CREATE DATABASE "{name}"')
        url = server_dsn(server, name)
        try:
            await apply_migrations(url)
            db = await Database.open(load_settings(pool_min_size=2, pool_max_size=8), url=url, migrate=False)
            try:
                started = time.perf_counter()
                org = await _seed(db)
                out: dict[str, Any] = {"seed_s": round(time.perf_counter() - started, 1)}
                texts = seed.queries(np.random.default_rng(5), seed.Vocabulary(), 6, 20)
                vectors = [Vector(v) for v in await get_embedder(seed.MODEL).embed(texts)]
                for m, ef_construction in builds:
                    build_s = await _rebuild(db, m, ef_construction)
                    key = f"m_{m}_ef_construction_{ef_construction}"
                    out[key] = {"build_s": round(build_s, 1), **await _recall(db, org, vectors)}
                    print(f"-- {key}: {json.dumps(out[key])}", file=sys.stderr, flush=True)
                return out
            finally:
                await db.close()
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.close()
            stop_embedded_server(Path(tmp))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--builds", nargs="*", default=["16:64", "32:128"])
    args = parser.parse_args()
    pairs = [(int(b.split(":")[0]), int(b.split(":")[1])) for b in args.builds]
    print(json.dumps(asyncio.run(main(pairs)), indent=1))
