"""Erasing a large organization while another tenant searches (issue 22).

Data shape: the erased organization holds 100 ready sources of 1,000 chunks each (100,000 chunks of
Cranfield-vocabulary text with Zipf-like word frequencies, so a common word matches about half of them,
seeded random unit vectors, BM25 postings built by the database's own triggers), one object per source in a
local object store and 5,000 memory chains; beside it a small tenant of 20 sources of 500 chunks (10,000)
that keeps searching. One HNSW index over all of it, built after the load.

Measured in one run: the other tenant's `knowledge.search` latency (the whole call: live model read, query
embedding with WordLlama, the hybrid statement) over `ROUNDS` calls before the erasure, and over every call
it made while the erasure ran; the erasure's wall time and its receipt's counts. Nothing is asserted.
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

from bench import _search_seed as seed
from bench._scratch import bench_server, scratch_database
from functions.organization_erasure import erase_organization
from knowledge.documents.objects import LocalObjectStore
from knowledge.search import search
from state.db import Database
from state.migrate import apply_migrations
from state.organizations import create_organization
from state.settings import load_settings

ERASED_SOURCES, ERASED_CHUNKS_PER_SOURCE = 100, 1000
OTHER_SOURCES, OTHER_CHUNKS_PER_SOURCE = 20, 500
MEMORIES = 5000
ROUNDS = 200
BATCH = 2000


def run() -> dict[str, Any]:
    return asyncio.run(_run())


async def _run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-bench-erase-") as tmp, bench_server(Path(tmp) / "pg") as server:
        async with scratch_database(server, "ac_bench_erase") as url:
            await apply_migrations(url)
            db = await Database.open(load_settings(pool_min_size=2, pool_max_size=8), url=url, migrate=False)
            try:
                store = LocalObjectStore(Path(tmp) / "objects")
                return await _measure(db, store)
            finally:
                await db.close()


async def _measure(db: Database, store: LocalObjectStore) -> dict[str, Any]:
    erased = (await create_organization(db, "erased")).id
    other = (await create_organization(db, "other")).id
    rng = np.random.default_rng(22)
    vocabulary = seed.Vocabulary()
    started = time.perf_counter()
    async with db.connection() as conn:
        await seed.drop_index(conn)
        chunks = await seed.seed_scope(
            conn, rng, vocabulary, erased, sources=ERASED_SOURCES, chunks_per_source=ERASED_CHUNKS_PER_SOURCE,
            words=40, title="erased",
        )  # fmt: skip
        await seed.seed_scope(
            conn, rng, vocabulary, other, sources=OTHER_SOURCES, chunks_per_source=OTHER_CHUNKS_PER_SOURCE,
            words=40, title="other",
        )  # fmt: skip
        await _seed_memories(conn, erased)
        await seed.build_index(conn)
        keys = await conn.fetch("SELECT object_key FROM agent.knowledge_sources WHERE organization_id = $1", erased)
    for row in keys:
        await store.put(row["object_key"], b"%PDF-1.4 bench object", content_type="application/pdf")
    seeded_s = time.perf_counter() - started

    queries = seed.queries(rng, vocabulary, 4, 50)
    await _searches(db, other, queries, rounds=10)  # warm the embedder and the plans
    before = await _searches(db, other, queries, rounds=ROUNDS)

    during: list[float] = []
    done = asyncio.Event()

    async def keep_searching() -> None:
        i = 0
        while not done.is_set():
            during.extend(await _searches(db, other, queries[i % len(queries) :][:1], rounds=1))
            i += 1

    searcher = asyncio.create_task(keep_searching())
    started = time.perf_counter()
    receipt = await erase_organization(db, store, erased, requested_by="bench", batch_size=BATCH)
    erase_s = time.perf_counter() - started
    done.set()
    await searcher
    return {
        "shape": {
            "erased_chunks": chunks,
            "erased_sources": ERASED_SOURCES,
            "erased_memories": MEMORIES,
            "other_tenant_chunks": OTHER_SOURCES * OTHER_CHUNKS_PER_SOURCE,
            "batch_size": BATCH,
        },
        "seed_s": round(seeded_s, 1),
        "erase_s": round(erase_s, 2),
        "receipt_counts": dict(receipt.counts),
        "other_tenant_search_ms_before": seed.summary(before),
        "other_tenant_search_ms_during": seed.summary(during),
        "p95_during_over_before": round(seed.summary(during)["p95"] / seed.summary(before)["p95"], 2),
    }


async def _searches(db: Database, org: uuid.UUID, queries: list[str], *, rounds: int) -> list[float]:
    times = []
    for i in range(rounds):
        started = time.perf_counter()
        await search(db, org, queries[i % len(queries)], include_organization=True, include_platform=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


async def _seed_memories(conn: asyncpg.Connection, org: uuid.UUID) -> None:
    """`MEMORIES` one-revision organization-scope chains, copied in one statement."""
    definition = await conn.fetchval(
        "INSERT INTO agent.definitions (organization_id, definition_kind, name) VALUES ($1, 'agent', 'bench')"
        " RETURNING id",
        org,
    )
    await conn.copy_records_to_table(
        "memories", schema_name="agent",
        records=[(org, definition, "organization", org, f"organization:{org}:observation.n{i}", f"fact {i}")
                 for i in range(MEMORIES)],
        columns=["organization_id", "definition_id", "scope", "scope_owner_id", "subject_key", "text"],
    )  # fmt: skip
