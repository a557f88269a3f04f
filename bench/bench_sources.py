"""Benchmark of the seven sources over application state, on a tenant with realistic row counts.

Seeds one tenant with 10,000 companies, 50,000 people and 20,000 runs (plus deals, prospects, a 200-message
conversation, a dossier, definitions and an outreach thread) and a second, look-alike tenant, with
generate_series in a few statements. It then measures each source's own read (median and p95 over
`ROUNDS` reads) and a `DefaultContextBuilder` build with all seven sources, beside the spec's targets
(application 10-40 ms, run history 10-40 ms, total concurrent 40-120 ms).

It uses `DATABASE_URL` when set, else its own embedded server in a temporary folder. Nothing here asserts a
timing; the numbers are reported.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

from bench._scratch import bench_server, scratch_database
from context.builder import DefaultContextBuilder
from context.models import (
    ContextPolicy,
    ContextRequest,
    ContextSourceSpec,
    ContextSubject,
    ResourceRef,
)
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from context.sources.dossier import DossierContextSource
from context.sources.standard import application_sources
from state.db import Database
from state.migrate import apply_migrations
from state.settings import load_settings

ROUNDS = 60
WARMUP = 5
COMPANIES, PEOPLE, RUNS, USERS = 10_000, 50_000, 20_000, 20

POLICY = ContextPolicy(
    sources=[
        ContextSourceSpec(name="conversation", token_budget=1500, limit=20),
        ContextSourceSpec(name="outreach_thread", token_budget=1000, limit=20),
        ContextSourceSpec(name="outreach", token_budget=400, limit=10),
        ContextSourceSpec(name="application", token_budget=1500, limit=120),
        ContextSourceSpec(name="dossier", token_budget=600, limit=5),
        ContextSourceSpec(name="definition_summary", token_budget=400, limit=10),
        ContextSourceSpec(name="run_history", token_budget=400, limit=5, options={"lookback_hours": 24}),
    ],
    total_token_budget=6000,
)


async def _seed_tenant(conn: asyncpg.Connection, org: uuid.UUID, *, scale: float, marker: str) -> dict[str, Any]:
    companies, people, runs = int(COMPANIES * scale), int(PEOPLE * scale), int(RUNS * scale)
    await conn.execute("INSERT INTO organizations (id, name) VALUES ($1, $2)", org, f"{marker} org")
    await conn.execute(
        "INSERT INTO users (organization_id, email, display_name, job_title) "
        "SELECT $1, $2 || g || '@bench.test', $2 || ' user ' || g, 'AE' FROM generate_series(1, $3) g",
        org,
        marker,
        USERS,
    )
    await conn.execute(
        "INSERT INTO crm_companies (organization_id, name, domain, website, industry, country, lifecycle_stage, "
        "description) SELECT $1, $2 || ' Company ' || g, $2 || g || '.test', 'https://' || $2 || g || '.test', "
        "'Software', 'DE', (ARRAY['lead','opportunity','customer'])[1 + g % 3], 'A company that sells things' "
        "FROM generate_series(1, $3) g",
        org,
        marker,
        companies,
    )
    await conn.execute(
        "WITH c AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM crm_companies WHERE organization_id = $1) "
        "INSERT INTO crm_people (organization_id, company_id, full_name, email, current_title, country) "
        "SELECT $1, c.id, $2 || ' Person ' || g, 'p' || g || '@' || $2 || '.test', 'Engineer', 'DE' "
        "FROM generate_series(1, $3) g JOIN c ON c.n = 1 + g % $4",
        org,
        marker,
        people,
        companies,
    )
    await conn.execute(
        "INSERT INTO crm_deals (organization_id, name, stage, status, amount, currency, company_id) "
        "SELECT $1, $2 || ' deal ' || row_number() OVER (), 'proposal', 'open', 10000, 'EUR', id "
        "FROM crm_companies WHERE organization_id = $1 LIMIT 2000",
        org,
        marker,
    )
    users = [r["id"] for r in await conn.fetch("SELECT id FROM users WHERE organization_id = $1 ORDER BY id", org)]
    company_ids = [
        r["id"] for r in await conn.fetch("SELECT id FROM crm_companies WHERE organization_id = $1 ORDER BY id", org)
    ]
    # 20,000 runs over 30 days, one of USERS users each, each naming two companies in its result refs.
    await conn.execute(
        "WITH c AS (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM crm_companies WHERE organization_id = $1),"
        " u AS (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM users WHERE organization_id = $1) "
        "INSERT INTO agent.runs (organization_id, user_id, status, input, result, created_at, failure_reason) "
        "SELECT $1, u.id, CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'succeeded' END, '{\"secret\": true}'::jsonb, "
        "jsonb_build_object('summary', 'Run ' || g || ' updated two accounts', 'refs', jsonb_build_array("
        "jsonb_build_object('kind', 'crm.company', 'id', c1.id::text), "
        "jsonb_build_object('kind', 'crm.company', 'id', c2.id::text))), "
        "now() - (g * interval '30 days' / $2), CASE WHEN g % 10 = 0 THEN 'provider timeout' END "
        "FROM generate_series(1, $2) g "
        "JOIN u ON u.n = g % $3 JOIN c AS c1 ON c1.n = (g * 7) % $4 JOIN c AS c2 ON c2.n = (g * 13) % $4",
        org,
        runs,
        USERS,
        companies,
    )
    conversation = await conn.fetchval(
        "INSERT INTO conversations (organization_id, user_id, summary) VALUES ($1, $2, $3) RETURNING id",
        org,
        users[0],
        f"{marker} negotiation summary",
    )
    await conn.execute(
        "INSERT INTO conversation_messages (organization_id, conversation_id, role, content, created_at) "
        "SELECT $1, $2, CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END, 'message ' || g, "
        "now() - (200 - g) * interval '1 minute' FROM generate_series(1, 200) g",
        org,
        conversation,
    )
    await conn.execute(
        "INSERT INTO org_company_profiles (organization_id, company_name, industry) VALUES ($1, $2, 'Software')",
        org,
        f"{marker} Inc",
    )
    await conn.execute(
        "INSERT INTO org_offers (organization_id, name, position) SELECT $1, 'Offer ' || g, g "
        "FROM generate_series(1, 5) g",
        org,
    )
    await conn.execute(
        "INSERT INTO org_documents (organization_id, title, summary, created_at) "
        "SELECT $1, 'Doc ' || g, 'Summary ' || g, now() - g * interval '1 hour' FROM generate_series(1, 300) g",
        org,
    )
    await conn.execute(
        "INSERT INTO agent.definitions (organization_id, definition_kind, name, status, safe_summary) "
        "SELECT $1, (ARRAY['agent','workflow','skill'])[1 + g % 3], 'Definition ' || g, 'published', 'Does ' || g "
        "FROM generate_series(1, 40) g",
        org,
    )
    person = await conn.fetchval("SELECT id FROM crm_people WHERE organization_id = $1 ORDER BY id LIMIT 1", org)
    sequence = await conn.fetchval(
        "INSERT INTO outreach_sequences (organization_id, name, step_count) VALUES ($1, 'Opener', 4) RETURNING id", org
    )
    await conn.execute(
        "INSERT INTO outreach_enrollments (organization_id, sequence_id, person_id, state, current_step, next_action) "
        "VALUES ($1, $2, $3, 'active', 2, 'send follow-up')",
        org,
        sequence,
        person,
    )
    await conn.execute(
        "INSERT INTO outreach_messages (organization_id, person_id, direction, body, sent_at) "
        "SELECT $1, $2, CASE WHEN g % 3 = 0 THEN 'inbound' ELSE 'outbound' END, 'mail ' || g, "
        "now() - (50 - g) * interval '1 hour' FROM generate_series(1, 50) g",
        org,
        person,
    )
    more_people = [
        r["id"]
        for r in await conn.fetch("SELECT id FROM crm_people WHERE organization_id = $1 ORDER BY id LIMIT 5", org)
    ]
    deal = await conn.fetchval("SELECT id FROM crm_deals WHERE organization_id = $1 ORDER BY id LIMIT 1", org)
    return {
        "users": users,
        "companies": company_ids,
        "people": [person, *more_people],
        "deal": deal,
        "conversation": conversation,
    }


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 2), "p95_ms": round(p95 * 1000, 2)}


async def _time(call: Callable[[], Awaitable[Any]], *, before: Callable[[], None] | None = None) -> dict[str, float]:
    samples: list[float] = []
    for i in range(WARMUP + ROUNDS):
        if before is not None:
            before()
        started = time.perf_counter()
        await call()
        if i >= WARMUP:
            samples.append(time.perf_counter() - started)
    return _stats(samples)


async def _main(url: str) -> dict[str, Any]:
    async with scratch_database(url, "ac_bench_sources") as db_url:
        await apply_migrations(db_url)
        seed_started = time.perf_counter()
        org_a, org_b = uuid.uuid4(), uuid.uuid4()
        conn = await asyncpg.connect(db_url)
        try:
            a = await _seed_tenant(conn, org_a, scale=1.0, marker="alpha")
            await _seed_tenant(conn, org_b, scale=0.5, marker="beta")
            await conn.execute("ANALYZE")
        finally:
            await conn.close()
        seed_s = time.perf_counter() - seed_started
        db = await Database.open(load_settings(pool_min_size=8, pool_max_size=16), url=db_url, migrate=False)
        try:
            return await _measure(db, org_a, a, seed_s)
        finally:
            await db.close()


async def _measure(db: Database, org: uuid.UUID, a: dict[str, Any], seed_s: float) -> dict[str, Any]:
    entities = [
        *(ResourceRef(kind="crm.company", id=str(c)) for c in a["companies"][:10]),
        *(ResourceRef(kind="crm.person", id=str(p)) for p in a["people"]),
        ResourceRef(kind="crm.deal", id=str(a["deal"])),
    ]
    request = ContextRequest(
        subject=ContextSubject(organization_id=org, user_id=a["users"][0]),
        query="how are these accounts doing?",
        entities=entities,
        conversation_id=a["conversation"],
    )
    dossier = DossierContextSource(db)
    sources = application_sources(db, dossier=dossier)
    specs = {s.name: s for s in POLICY.sources}
    per_source: dict[str, dict[str, float]] = {}
    item_counts: dict[str, int] = {}
    try:
        for source in sources:
            spec = specs[source.name]
            item_counts[source.name] = len(await source.retrieve(request, spec))
            per_source[source.name] = await _time(lambda s=source, sp=spec: s.retrieve(request, sp))  # type: ignore[misc]
        per_source["dossier_cold"] = await _time(
            lambda: dossier.retrieve(request, specs["dossier"]), before=dossier.cache.clear
        )
        wide = ContextSourceSpec(name="run_history", token_budget=400, limit=5, options={"lookback_hours": 720})
        per_source["run_history_720h"] = await _time(lambda: sources[-1].retrieve(request, wide))
        builder = DefaultContextBuilder(ContextSourceRegistry(sources), ContextPacker())
        brief = await builder.build(request, POLICY)
        build = await _time(lambda: builder.build(request, POLICY))
    finally:
        await dossier.aclose()
    return {
        "rows": {"companies": COMPANIES, "people": PEOPLE, "runs": RUNS, "second_tenant_scale": 0.5},
        "seed_s": round(seed_s, 1),
        "rounds": ROUNDS,
        "per_source": per_source,
        "items": item_counts,
        "build_all_seven": build,
        "brief": {
            "tokens": brief.tokens,
            "per_source_tokens": brief.per_source_tokens,
            "dropped": brief.dropped,
            "failed_sources": brief.failed_sources,
        },
        "targets_ms": {"application": [10, 40], "run_history": [10, 40], "total_concurrent": [40, 120]},
    }


def run() -> dict[str, Any]:
    """Seed, measure and return the numbers (uses DATABASE_URL, else an embedded server in a temp folder)."""
    with tempfile.TemporaryDirectory(prefix="ac-bench-sources-") as tmp, bench_server(Path(tmp)) as server:
        return asyncio.run(_main(server))
