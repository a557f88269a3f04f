"""Benchmark of the operator console: each page's server time at the big tenant, beside the 150 ms goal.

Seeds the shape of `bench_search`'s big tenant: one organization with 100,000 chunks (1,000 ready sources of
100 chunks, Cranfield words with Zipf-like frequencies, so a common term matches many rows; WordLlama
vectors), 50 failed and 100 overdue sources among them, 5,000 live memories and a few receipts, beside 20
small look-alike organizations. Then serves the app (`functions.app.create_app`) in-process, signs in with
the operator token through the sign-in form, and times each page (`ROUNDS` requests after `WARMUP`) from
the request to the last byte of the answer over the ASGI transport: the server's time, with no network.
Reports each page's median and p95 beside the issue's goal (<= 150 ms). Nothing here asserts a timing.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import inngest
import numpy as np

from bench import _search_seed as seed
from bench._goals import goal
from bench._scratch import bench_server, scratch_database
from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.registry import get_embedder
from state.db import Database
from state.migrate import apply_migrations
from state.settings import load_settings

ROUNDS = 30
WARMUP = 3
GOAL_MS = 150.0
TOKEN = "bench-console-token-0123456789"


async def _embed(texts: list[str]) -> np.ndarray:
    return np.asarray(await get_embedder(seed.MODEL).embed(texts), dtype=np.float32)


async def _seed(db: Database) -> dict[str, Any]:
    rng = np.random.default_rng(34)
    vocabulary = seed.Vocabulary()
    big = uuid.uuid4()
    small = [uuid.uuid4() for _ in range(20)]
    started = time.perf_counter()
    async with db.connection() as conn:
        await conn.copy_records_to_table(
            "organizations", schema_name="public",
            records=[(big, "Big tenant"), *((o, f"Small {i}") for i, o in enumerate(small))], columns=["id", "name"],
        )  # fmt: skip
        await seed.drop_index(conn)
        chunks = 0
        for n in range(10):
            chunks += await seed.seed_scope(
                conn, rng, vocabulary, big, sources=100, chunks_per_source=100, words=50, embed=_embed,
                title=f"big {n}",
            )  # fmt: skip
        for org in small:
            await seed.seed_scope(
                conn, rng, vocabulary, org, sources=5, chunks_per_source=20, words=50, embed=_embed, title="small"
            )
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = 'extraction_failed: bench'"
            " WHERE id IN (SELECT id FROM agent.knowledge_sources WHERE organization_id = $1 ORDER BY id LIMIT 50)",
            big,
        )
        await conn.execute(
            "UPDATE agent.knowledge_sources SET review_by = current_date - 10, owner = 'bench'"
            " WHERE id IN (SELECT id FROM agent.knowledge_sources WHERE organization_id = $1"
            " ORDER BY id DESC LIMIT 100)",
            big,
        )
        definition = await conn.fetchval(
            "INSERT INTO agent.definitions (organization_id, definition_kind, name, status)"
            " VALUES ($1, 'agent', 'Bench agent', 'published') RETURNING id",
            big,
        )
        await conn.execute(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key, text,"
            " subject_refs) SELECT $1, $2, 'organization', $1, 'organization:' || $3 || ':observation.n' || g,"
            " 'The customer prefers invoices in euros, note ' || g, '[]'::jsonb FROM generate_series(1, 5000) g",
            big,
            definition,
            str(big),
        )
        memory = await conn.fetchval("SELECT id FROM agent.memories WHERE organization_id = $1 LIMIT 1", big)
        index_s = await seed.build_index(conn)
        sample = await conn.fetchrow(
            "SELECT id FROM agent.knowledge_sources WHERE organization_id = $1 AND status = 'ready' LIMIT 1", big
        )
    query = seed.queries(rng, vocabulary, 4, 1)[0]
    return {
        "big": big, "memory": memory, "source": sample["id"], "query": query,
        "seed_s": round(time.perf_counter() - started, 1), "index_s": round(index_s, 1), "chunks": chunks,
    }  # fmt: skip


async def _sign_in(http: httpx.AsyncClient) -> dict[str, str]:
    form = await http.get("/console/sign-in")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf is not None
    answer = await http.post(
        "/console/sign-in", data={"key": TOKEN, "csrf": csrf.group(1), "next": "/console"},
        headers={"Cookie": f"ac_console_pre={form.cookies['ac_console_pre']}"},
    )  # fmt: skip
    cookie = re.search(r"ac_console=([^;]+)", answer.headers["set-cookie"])
    assert answer.status_code == 303 and cookie is not None, answer.text
    return {"Cookie": f"ac_console={cookie.group(1)}"}


async def _time(http: httpx.AsyncClient, headers: dict[str, str], path: str) -> dict[str, float]:
    times: list[float] = []
    for n in range(WARMUP + ROUNDS):
        started = time.perf_counter()
        answer = await http.get(path, headers=headers)
        elapsed = (time.perf_counter() - started) * 1000
        if answer.status_code != 200:
            raise RuntimeError(f"{path} answered {answer.status_code}: {answer.text[:300]}")
        if n >= WARMUP:
            times.append(elapsed)
    ordered = sorted(times)
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1),
        "bytes": len(answer.content),
    }


async def _run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-bench-console-") as tmp, bench_server(Path(tmp)) as server:
        async with scratch_database(server, "ac_bench_console") as url:
            await apply_migrations(url)
            db = await Database.open(load_settings(pool_min_size=2, pool_max_size=8), url=url, migrate=False)
            try:
                world = await _seed(db)
                print(f"-- seeded: {world['chunks']} chunks in {world['seed_s']} s", file=sys.stderr, flush=True)
                app = create_app(
                    load_settings(api_token=TOKEN, data_dir=Path(tmp)), db=db,
                    inngest_client=inngest.Inngest(app_id="ac-bench", is_production=False),
                    object_store=LocalObjectStore(Path(tmp) / "objects"),
                )  # fmt: skip
                async with app.router.lifespan_context(app):
                    transport = httpx.ASGITransport(app=app)
                    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
                        headers = await _sign_in(http)
                        pages = _pages(world)
                        first = await http.get(pages["sources"], headers=headers)
                        cursor = re.search(r'cursor=([^"&]+)"', first.text)
                        if cursor:
                            pages["sources, page 2 (cursor)"] = f"{pages['sources']}?cursor={cursor.group(1)}"
                        timed = {}
                        for name, path in pages.items():
                            timed[name] = await _time(http, headers, path)
                            print(f"-- {name}: {timed[name]}", file=sys.stderr, flush=True)
            finally:
                await db.close()
    return {
        "shape": {k: world[k] for k in ("chunks", "seed_s", "index_s")} | {"memories": 5000, "small_orgs": 20},
        "rounds": ROUNDS,
        "pages": timed,
        "goal_report": [
            goal(f"console {name}: p95 server time", t["p95_ms"], at_most=GOAL_MS, unit=" ms")
            for name, t in timed.items()
        ],
    }


def _pages(world: dict[str, Any]) -> dict[str, str]:
    org = f"/console/orgs/{world['big']}"
    q = world["query"].replace(" ", "+")
    return {
        "organizations": "/console/orgs",
        "sources": f"{org}/sources",
        "sources, failed": f"{org}/sources?status=failed",
        "sources, overdue": f"{org}/sources?overdue=true",
        "sources, title text": f"{org}/sources?q=big+7",
        "source with chunks": f"{org}/sources/{world['source']}",
        "search, hybrid": f"{org}/search?q={q}&mode=hybrid",
        "search, dense": f"{org}/search?q={q}&mode=dense",
        "search, lexical": f"{org}/search?q={q}&mode=lexical",
        "brief explorer": f"{org}/brief?q={q}&build=true",
        "memories": f"{org}/memories",
        "memory chain": f"{org}/memories/{world['memory']}",
        "receipts": f"{org}/receipts",
        "health": "/console/health",
    }


def run() -> dict[str, Any]:
    return asyncio.run(_run())
