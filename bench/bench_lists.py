"""How fast the paged lists answer at the big tenant: each list's first page and a deep page, with its total.

Seeds one big tenant (4,000 sources of 25 chunks = 100,000 chunks, one 2,000-chunk manual, a tenth of the
sources failed and a twentieth overdue, every title sharing the common word `handbook`; 20,000 live memories
of which 2,000 are one person's, and 5,000 superseded revisions; 3,000 receipts; 2,000 API keys) beside 1,200
small organizations (200 of them with 5 sources of 4 chunks and 20 memories). The big tenant is the oldest
organization, so its counts sit on the organizations list's first page. Each list is read through the same
function the API, the CLI and the console call (`state.paging`), `ROUNDS` times: the first page (`PAGE`
rows) and a deep page (its cursor reached by walking the list first), with the `total` the list reports.
The goal beside each figure is the console's whole page budget (issue 34: 150 ms of server time at the
100,000-chunk tenant; issue 47 item 5: every list within it). Issue 47 adds the sorted orders (organizations
by name, sources by title, memories by subject), the previous page read back from each deep page (lists
that page both ways), and the memory filters (a person by email text, a subject ref). The totals of the
unfiltered memories list and the organizations' counts come from the trigger-kept counters of migration
0117. Nothing here asserts a timing; medians and p95s are reported.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from bench import _search_seed as seed
from bench._goals import goal
from bench._scratch import bench_server, scratch_database
from knowledge.ingestion.source_pages import page_chunks, page_sources, source_progress
from memory.pages import page_memories
from state.api_keys import page_keys
from state.db import Database
from state.migrate import apply_migrations
from state.organization_overview import page_organizations
from state.paging import Page
from state.receipts import page_receipts
from state.settings import load_settings

ROUNDS = 40
WARMUP = 5
PAGE = 50
SOURCES, CHUNKS_PER_SOURCE, MANUAL_CHUNKS = 4_000, 25, 2_000
MEMORIES, PERSON_MEMORIES, SUPERSEDED = 20_000, 2_000, 5_000
RECEIPTS, KEYS, SMALL_ORGS, SMALL_WITH_SOURCES, SMALL_MEMORIES = 3_000, 2_000, 1_200, 200, 20
GOAL_MS = 150.0

Fetch = Callable[[str | None, int], Awaitable[Page[Any]]]


def run() -> dict[str, Any]:
    return asyncio.run(_run())


async def _run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-bench-lists-") as tmp, bench_server(Path(tmp)) as server:
        async with scratch_database(server, "ac_bench_lists") as url:
            await apply_migrations(url)
            db = await Database.open(load_settings(pool_min_size=1, pool_max_size=4), url=url, migrate=False)
            try:
                shape = await _seed(db)
                lists = await _measure(db, shape)
            finally:
                await db.close()
    return {
        "seed": shape["seed"],
        "page_rows": PAGE,
        "lists": lists,
        "goal_report": [
            goal(f"{name} p95", row["p95_ms"], at_most=GOAL_MS, unit=" ms",
                 note=f"total {row['total']}; the console's whole page budget at the 100,000-chunk tenant")
            for name, row in lists.items()
        ],
    }  # fmt: skip


def _say(text: str) -> None:
    print(f"-- {text}", file=sys.stderr, flush=True)


async def _seed(db: Database) -> dict[str, Any]:
    started = time.perf_counter()
    rng = np.random.default_rng(7)
    vocabulary = seed.Vocabulary()
    big = uuid.uuid4()
    async with db.connection() as conn:
        await conn.execute(
            "INSERT INTO public.organizations (id, name, created_at) "
            "VALUES ($1, 'Big Tenant', now() - interval '1 year')",
            big,
        )
        await conn.execute(
            "INSERT INTO public.organizations (name, created_at) "
            "SELECT 'small org ' || g, now() - interval '1 day' + g * interval '1 second' "
            "FROM generate_series(1, $1) g",
            SMALL_ORGS,
        )
        smalls = [r["id"] for r in await conn.fetch(
            "SELECT id FROM public.organizations WHERE id <> $1 ORDER BY created_at LIMIT $2", big, SMALL_WITH_SOURCES
        )]  # fmt: skip
        await seed.drop_index(conn)
        for n in range(4):
            await seed.seed_scope(
                conn, rng, vocabulary, big, sources=SOURCES // 4, chunks_per_source=CHUNKS_PER_SOURCE, words=40,
                title=f"handbook part {n}",
            )  # fmt: skip
        await seed.seed_scope(
            conn, rng, vocabulary, big, sources=1, chunks_per_source=MANUAL_CHUNKS, words=40, title="long manual"
        )
        for org in smalls:
            await seed.seed_scope(conn, rng, vocabulary, org, sources=5, chunks_per_source=4, words=40, title="note")
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = 'document_malformed: bench' "
            "WHERE organization_id = $1 AND abs(hashtext(id::text)) % 10 = 0 AND title NOT LIKE 'long manual%'",
            big,
        )
        await conn.execute(
            "UPDATE agent.knowledge_sources SET review_by = '2020-01-01' "
            "WHERE organization_id = $1 AND abs(hashtext(id::text)) % 20 = 1",
            big,
        )
        manual = await conn.fetchval(
            "SELECT id FROM agent.knowledge_sources WHERE organization_id = $1 AND title LIKE 'long manual%'", big
        )
        person = await _seed_memories(conn, big)
        await _seed_small_memories(conn, smalls)
        await conn.execute(
            "INSERT INTO agent.removal_receipts (kind, organization_id, target_id, requested_by, status, counts, "
            "started_at, finished_at) SELECT 'user', $1, gen_random_uuid(), 'bench', 'complete', "
            "'{\"agent.memories\": 3}'::jsonb, now() - g * interval '1 minute', now() - g * interval '1 minute' "
            "FROM generate_series(1, $2) g",
            big,
            RECEIPTS,
        )
        await conn.copy_records_to_table(
            "api_keys", schema_name="agent",
            records=[
                (secrets.token_hex(8), "organization", big, f"key {n}", secrets.token_bytes(32)) for n in range(KEYS)
            ],
            columns=["id", "scope", "organization_id", "name", "secret_sha256"],
        )  # fmt: skip
        await conn.execute("VACUUM (ANALYZE)")
        chunks = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_chunks c JOIN agent.knowledge_sources s ON s.id = c.source_id "
            "WHERE s.organization_id = $1",
            big,
        )
    seconds = round(time.perf_counter() - started, 1)
    _say(f"seeded in {seconds} s: {chunks} chunks at the big tenant")
    return {
        "big": big,
        "manual": manual,
        "person": person,
        "seed": {"big_tenant_chunks": chunks, "big_tenant_sources": SOURCES + 1, "organizations": SMALL_ORGS + 1,
                 "memories_live": MEMORIES, "receipts": RECEIPTS, "keys": KEYS, "seed_s": seconds},
    }  # fmt: skip


async def _seed_memories(conn: asyncpg.Connection, org: uuid.UUID) -> uuid.UUID:
    """MEMORIES live memories (PERSON_MEMORIES of one person), SUPERSEDED of them superseded once; the person."""
    definition = await conn.fetchval(
        "INSERT INTO agent.definitions (organization_id, definition_kind, name, status) "
        "VALUES ($1, 'agent', 'bench agent', 'published') RETURNING id",
        org,
    )
    person = await conn.fetchval(
        "INSERT INTO public.users (organization_id, email) VALUES ($1, 'person@bench.test') RETURNING id", org
    )
    await conn.execute(
        "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, "
        "text, created_at) "
        "SELECT $1::uuid, $2::uuid, CASE WHEN g <= $4 THEN 'user' ELSE 'organization' END, "
        "CASE WHEN g <= $4 THEN $3::uuid END, CASE WHEN g <= $4 THEN $3::uuid ELSE $1::uuid END, "
        "CASE WHEN g <= $4 THEN 'user:' || $3::uuid::text ELSE 'organization:' || $1::uuid::text END "
        "|| ':observation.fact_' || g, "
        "'remembered fact number ' || g, now() - interval '30 days' + g * interval '1 second' "
        "FROM generate_series(1, $5) g",
        org, definition, person, PERSON_MEMORIES, MEMORIES,
    )  # fmt: skip
    await conn.execute(
        "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, "
        "text, supersedes_id) "
        "SELECT organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text || ' (revised)', id "
        "FROM agent.memories WHERE organization_id = $1 ORDER BY created_at DESC LIMIT $2",
        org,
        SUPERSEDED,
    )
    return person  # type: ignore[no-any-return]


async def _seed_small_memories(conn: asyncpg.Connection, organizations: list[uuid.UUID]) -> None:
    """SMALL_MEMORIES organization memories in each of `organizations`, so no one tenant holds all memory."""
    await conn.execute(
        "INSERT INTO agent.definitions (organization_id, definition_kind, name, status) "
        "SELECT o, 'agent', 'small agent', 'published' FROM unnest($1::uuid[]) o",
        organizations,
    )
    await conn.execute(
        "INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key, text) "
        "SELECT d.organization_id, d.id, 'organization', d.organization_id, "
        "'organization:' || d.organization_id::text || ':observation.fact_' || g, 'a small fact ' || g "
        "FROM agent.definitions d CROSS JOIN generate_series(1, $2) g "
        "WHERE d.organization_id = ANY($1::uuid[]) AND d.name = 'small agent'",
        organizations,
        SMALL_MEMORIES,
    )


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2), "p95_ms": round(p95 * 1000, 2)}


async def _timed(call: Callable[[], Awaitable[Any]]) -> tuple[dict[str, float], Any]:
    samples: list[float] = []
    answer = None
    for i in range(WARMUP + ROUNDS):
        started = time.perf_counter()
        answer = await call()
        if i >= WARMUP:
            samples.append(time.perf_counter() - started)
    return _stats(samples), answer


async def _cursor_at(fetch: Fetch, depth: int) -> str | None:
    """The cursor after the first `depth` rows of a list, reached by walking it."""
    cursor, seen = None, 0
    while seen < depth:
        page = await fetch(cursor, min(1000, depth - seen))
        seen += len(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    return cursor


async def _measure(db: Database, shape: dict[str, Any]) -> dict[str, Any]:
    big, manual, person = shape["big"], shape["manual"], shape["person"]
    lists: dict[str, tuple[Fetch, int]] = {
        "organizations": (lambda c, n: page_organizations(db, cursor=c, limit=n), 1_000),
        "organizations named 'small org 1'": (
            lambda c, n: page_organizations(db, name="small org 1", cursor=c, limit=n), 100),
        "keys": (lambda c, n: page_keys(db, organization_id=big, cursor=c, limit=n), 1_800),
        "sources": (lambda c, n: page_sources(db, big, cursor=c, limit=n), 3_500),
        "sources failed": (lambda c, n: page_sources(db, big, status="failed", cursor=c, limit=n), 300),
        "sources overdue": (lambda c, n: page_sources(db, big, overdue=True, cursor=c, limit=n), 150),
        "sources titled 'handbook' (every row)": (
            lambda c, n: page_sources(db, big, title="handbook", cursor=c, limit=n), 3_500),
        "chunks of a 2,000-chunk source": (
            lambda c, n: page_chunks(db, manual, organization_id=big, cursor=c, limit=n), 1_900),
        "memories": (lambda c, n: page_memories(db, organization_id=big, cursor=c, limit=n), 18_000),
        "memories of one person": (
            lambda c, n: page_memories(db, organization_id=big, user_id=person, cursor=c, limit=n), 1_800),
        "receipts": (lambda c, n: page_receipts(db, organization_id=big, cursor=c, limit=n), 2_800),
        "organizations by name": (lambda c, n: page_organizations(db, sort="name", cursor=c, limit=n), 1_000),
        "sources by title": (lambda c, n: page_sources(db, big, sort="title", cursor=c, limit=n), 3_500),
        "memories by subject": (
            lambda c, n: page_memories(db, organization_id=big, sort="subject", cursor=c, limit=n), 18_000),
        "memories of a person named by email text": (
            lambda c, n: page_memories(db, organization_id=big, person="PERSON@bench", cursor=c, limit=n), 1_800),
        "memories about a subject ref": (
            lambda c, n: page_memories(db, organization_id=big, subject=f"person:{person}", cursor=c, limit=n), 0),
    }  # fmt: skip
    out: dict[str, Any] = {}
    for name, (fetch, depth) in lists.items():
        first, page = await _timed(lambda f=fetch: f(None, PAGE))  # type: ignore[misc]
        out[f"{name}: first page"] = {**first, "total": page.total, "rows": len(page.items)}
        if depth == 0:
            _say(f"{name}: first {first}, total {page.total}")
            continue
        cursor = await _cursor_at(fetch, depth)
        deep, page = await _timed(lambda f=fetch, c=cursor: f(c, PAGE))  # type: ignore[misc]
        out[f"{name}: page after row {depth}"] = {**deep, "total": page.total, "rows": len(page.items)}
        if page.prev_cursor is not None:
            back, before = await _timed(lambda f=fetch, c=page.prev_cursor: f(c, PAGE))  # type: ignore[misc]
            out[f"{name}: previous page from row {depth}"] = {**back, "total": before.total, "rows": len(before.items)}
            _say(f"{name}: back {back}")
        _say(f"{name}: first {first}, deep {deep}, total {page.total}")
    progress, answer = await _timed(lambda: source_progress(db, manual, organization_id=big))
    out["progress of the 2,000-chunk source"] = {**progress, "total": answer.chunks_total, "rows": 1}
    return out


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    print(run())
