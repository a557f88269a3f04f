"""Benchmark of the `memory` and `personal_memory` reads on a tenant holding 5,000 memory rows.

Seeds one tenant with 5,000 rows of `agent.memories`: 250 organization memories naming 150 distinct CRM
companies (the newest), 1,500 organization memories about the organization itself across three agents,
2,500 user memories of 20 people, and 375 chains of two revisions (an old revision and its head); and a
second tenant with 2,000 rows as neighbours. It then measures each read (median and p95 over `ROUNDS`)
beside the spec's memory read target of 10-30 ms, and counts the resolver queries of the 250-memory read.

It uses `DATABASE_URL` when set, else its own embedded server in a temporary folder. Nothing here asserts a
timing; the numbers are reported.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

from bench._scratch import bench_server, scratch_database
from context.models import ContextItem, ContextRequest, ContextSourceSpec, ContextSubject
from context.sources.memory import MemoryContextSource
from context.sources.personal_memory import PersonalMemoryContextSource
from state.db import Database
from state.migrate import apply_migrations
from state.scoped import record_queries
from state.settings import load_settings

ROUNDS = 200
WARMUP = 10
USERS, COMPANIES = 20, 150
TARGET_MS = (10, 30)


async def _seed(conn: asyncpg.Connection, org: uuid.UUID, *, scale: float, marker: str) -> dict[str, Any]:
    """One tenant; at scale 1.0 exactly 5,000 memory rows. Returns the ids the reads need."""
    await conn.execute("INSERT INTO organizations (id, name) VALUES ($1, $2)", org, marker)
    users = [
        r["id"]
        for r in await conn.fetch(
            "INSERT INTO users (organization_id, email) SELECT $1, $2 || g || '@bench.test' "
            "FROM generate_series(1, $3) g RETURNING id",
            org,
            marker,
            USERS,
        )
    ]
    agents = [
        r["id"]
        for r in await conn.fetch(
            "INSERT INTO agent.definitions (organization_id, definition_kind, name, status) "
            "SELECT $1, 'agent', 'Agent ' || g, 'published' FROM generate_series(1, 3) g RETURNING id",
            org,
        )
    ]
    companies = [
        r["id"]
        for r in await conn.fetch(
            "INSERT INTO crm_companies (organization_id, name, lifecycle_stage) "
            "SELECT $1, $2 || ' Co ' || g, 'lead' FROM generate_series(1, $3) g RETURNING id",
            org,
            marker,
            COMPANIES,
        )
    ]
    n = lambda count: int(count * scale)  # noqa: E731
    # 1,500 organization memories about the organization itself, spread over three agents, older.
    await conn.execute(
        "INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key, text, "
        "created_at) SELECT $1::uuid, ($2::uuid[])[1 + g % 3], 'organization', $1::uuid, "
        "'organization:' || $1::text || ':observation.org_' || g, 'organization fact ' || g, "
        "now() - interval '2 days' + g * interval '1 second' FROM generate_series(1, $3) g",
        org,
        agents,
        n(1500),
    )
    # 2,500 user memories of 20 people, half preferences, over three agents.
    await conn.execute(
        "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, "
        "text, created_at) SELECT $1::uuid, ($2::uuid[])[1 + g % 3], 'user', u, u, "
        "'user:' || u::text || CASE WHEN g % 2 = 0 THEN ':preference.p_' ELSE ':observation.u_' END || g, "
        "'user fact ' || g, now() - interval '1 day' + g * interval '1 second' "
        "FROM generate_series(1, $4) g, LATERAL (SELECT ($3::uuid[])[1 + g % $5] AS u) AS pick",
        org,
        agents,
        users,
        n(2500),
        USERS,
    )
    # 375 chains of two revisions: a root and the head that supersedes it.
    await conn.execute(
        "WITH roots AS (INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, "
        "subject_key, text, created_at) SELECT $1::uuid, $2, 'organization', $1::uuid, "
        "'organization:' || $1::text || ':preference.chain_' || g, 'old revision ' || g, now() - interval '3 days' "
        "FROM generate_series(1, $3) g RETURNING id, subject_key) "
        "INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key, text, "
        "supersedes_id, created_at) SELECT $1::uuid, $2, 'organization', $1::uuid, subject_key, "
        "'current revision', id, now() - interval '3 hours' FROM roots",
        org,
        agents[0],
        n(375),
    )
    # 250 organization memories of the first agent naming 150 distinct companies, the newest rows.
    await conn.execute(
        "INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key, text, "
        "subject_refs, created_at) SELECT $1::uuid, $2, 'organization', $1::uuid, "
        "'crm.company:' || c || ':observation.buying_' || g, 'buys through procurement ' || g, "
        "jsonb_build_array(jsonb_build_object('kind', 'crm.company', 'id', c::text)), "
        "now() - g * interval '1 second' "
        "FROM generate_series(1, $4) g, LATERAL (SELECT ($3::uuid[])[1 + g % array_length($3::uuid[], 1)] AS c) s",
        org,
        agents[0],
        companies,
        n(250),
    )
    rows = await conn.fetchval("SELECT count(*) FROM agent.memories WHERE organization_id = $1", org)
    return {"users": users, "agents": agents, "companies": companies, "rows": rows}


async def _time(read: Callable[[], Awaitable[list[ContextItem]]]) -> dict[str, Any]:
    for _ in range(WARMUP):
        await read()
    samples: list[float] = []
    items = 0
    for _ in range(ROUNDS):
        started = time.perf_counter()
        items = len(await read())
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples), 2),
        "p95_ms": round(samples[int(len(samples) * 0.95) - 1], 2),
        "items": items,
    }


async def _measure(db: Database, org: uuid.UUID, seeded: dict[str, Any]) -> dict[str, Any]:
    memory, personal = MemoryContextSource(db), PersonalMemoryContextSource(db)
    user, agent = seeded["users"][0], seeded["agents"][0]
    run = ContextSubject.for_run(organization_id=org, definition_id=agent, user_id=user)
    turn = ContextSubject.of_actor(org, user)
    trigger = ContextSubject.for_run(organization_id=org, definition_id=agent, trigger_id=uuid.uuid4())

    def read(
        source: Any, subject: ContextSubject, limit: int | None = None
    ) -> Callable[[], Awaitable[list[ContextItem]]]:
        request = ContextRequest(subject=subject, query="", entities=[])
        spec = ContextSourceSpec(name=source.name, token_budget=10_000, limit=limit)
        return lambda: source.retrieve(request, spec)

    with record_queries() as log:
        wide = await read(memory, run, 250)()
    return {
        "memory_run_default_limit_20": await _time(read(memory, run)),
        "memory_front_door_turn_no_definition": await _time(read(memory, turn)),
        "memory_trigger_run": await _time(read(memory, trigger)),
        "memory_run_limit_250_naming_150_companies": await _time(read(memory, run, 250)),
        "personal_memory_run": await _time(read(personal, run)),
        "resolver_queries_of_the_250_read": dict(Counter(log.tables())),
        "items_of_the_250_read": len(wide),
    }


async def _main(server: str) -> dict[str, Any]:
    async with scratch_database(server, "ac_bench_memory") as db_url:
        await apply_migrations(db_url)
        started = time.perf_counter()
        org, neighbour = uuid.uuid4(), uuid.uuid4()
        conn = await asyncpg.connect(db_url)
        try:
            seeded = await _seed(conn, org, scale=1.0, marker="alpha")
            await _seed(conn, neighbour, scale=0.4, marker="beta")
            await conn.execute("ANALYZE")
        finally:
            await conn.close()
        seed_s = time.perf_counter() - started
        db = await Database.open(load_settings(pool_min_size=4, pool_max_size=8), url=db_url, migrate=False)
        try:
            reads = await _measure(db, org, seeded)
        finally:
            await db.close()
    return {
        "spec_target_memory_read_ms": list(TARGET_MS),
        "tenant_memory_rows": seeded["rows"],
        "rounds": ROUNDS,
        "seed_s": round(seed_s, 2),
        "reads": reads,
    }


def run() -> dict[str, Any]:
    """Seed, measure and return the numbers (uses DATABASE_URL, else an embedded server in a temp folder)."""
    with tempfile.TemporaryDirectory(prefix="ac-bench-memory-") as tmp, bench_server(Path(tmp)) as server:
        return asyncio.run(_main(server))
