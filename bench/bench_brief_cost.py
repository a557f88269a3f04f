"""What one FRONT_DOOR brief costs at the big tenant (issue 24): statements, CPU on both sides, and latency.

`run()` seeds the big-tenant database of `bench_search` once (100,000 chunks in one organization, 20
look-alike tenants, platform chunks, the 5,000-source tenant and the application rows of `bench_sources`),
then measures the same build twice in the same session against the same database:

- `after`: this tree's code, in this process (measured between two `before` runs);
- `before`: the code of `BEFORE_COMMIT` (the commit before issue 24's brief work), extracted with `git archive`
  into a temporary folder and run as a subprocess of this very file (copied in), so the two figures come
  from one measurement procedure on one database, minutes apart.

For each: the messages one build sends (asyncpg's query logger on every pooled connection: one entry per
query message the client sends, the pool's reset included, asyncpg's one-off type introspection left out),
and the SQL statements in them (a simple-query message may hold several), the same after every connection
held another tenant (the worst case of a busy service), Python CPU per brief (`time.process_time` over the
builds), PostgreSQL CPU per brief (the pooled backends' utime + stime from /proc/<pid>/stat, before and
after; the server runs on this machine), and the build's p50/p99.

`dense` sweeps the candidate count (per list) and hnsw.ef_search at the big tenant (~72 % of the index) and
at the 5,000-source tenant (~13 % of the index): dense recall against the exact scan, the overlap of the
hybrid top 8 with the top 8 fused from the exact dense list (same candidates, and today's 32), the
search's p50/p95 and its backend's CPU per search (its own connection, /proc).

`python -m bench.bench_brief_cost --url URL --measure` measures the current code against a seeded database
(the `before` subprocess); `--seed-only` seeds and leaves the database. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import subprocess
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
from context.builder import DefaultContextBuilder
from context.models import ContextRequest, ContextSubject, ResourceRef
from context.packer import ContextPacker
from context.policies import FRONT_DOOR
from context.sources import default_registry
from knowledge.embedding.registry import get_embedder
from state.db import Database, init_connection
from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
from state.settings import load_settings

BEFORE_COMMIT = "a71b856"
"""The code before issue 45's brief work (main with the static knowledge_search of migration 0107)."""
DATABASE = "ac_bench_brief_cost"
BUILDS = 300
"""Timed FRONT_DOOR builds of the bench's own request, after WARM untimed ones."""
WARM = 20
TERM_COUNTS = (1, 6, 10)
"""The query lengths issue 45 measures a brief and a search at."""
PER_TERMS = 120
"""Timed builds (and searches) per query length, over QUERIES_PER_TERMS queries in turn."""
QUERIES_PER_TERMS = 12
POOL = 16
ROOT = Path(__file__).resolve().parents[1]


_INTROSPECTION = ("SELECT current_setting('jit')", "SELECT set_config('jit'", "WITH RECURSIVE typeinfo_tree")
"""asyncpg's type introspection, once per connection and type: not counted (whichever build meets it first)."""


def _cpu_ticks(pid: int) -> int:
    """utime + stime of a process, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _connections(db: Database) -> list[Any]:
    """Every open connection of the pool (min size = max size, so all are open from the start)."""
    return [h._con for h in db.pool._holders if h._con is not None]


async def _scopes(url: str) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    try:
        doc = await conn.fetchval("SELECT doc FROM public.bench_brief_scopes")
    finally:
        await conn.close()
    return json.loads(doc)


def _request(scopes: dict[str, Any]) -> ContextRequest:
    app = scopes["app"]
    return ContextRequest(
        subject=ContextSubject(organization_id=uuid.UUID(scopes["big"]), user_id=uuid.UUID(app["users"][0])),
        query="stability of the boundary layer flow over the wing at supersonic speed",
        entities=[
            *(ResourceRef(kind="crm.company", id=str(c)) for c in app["companies"][:10]),
            *(ResourceRef(kind="crm.person", id=str(p)) for p in app["people"]),
            ResourceRef(kind="crm.deal", id=str(app["deal"])),
        ],
        conversation_id=uuid.UUID(app["conversation"]),
    )


async def measure(url: str) -> dict[str, Any]:
    """Statements, CPU and latency of FRONT_DOOR builds with this process's code."""
    scopes = await _scopes(url)
    db = await Database.open(load_settings(pool_min_size=POOL, pool_max_size=POOL), url=url, migrate=False)
    try:
        request = _request(scopes)
        # A loaded machine must not fail a source (a failed source is work not measured): a generous timeout.
        builder = DefaultContextBuilder(default_registry(db), ContextPacker(), source_timeout_s=30.0)
        for _ in range(WARM):
            brief = await builder.build(request, FRONT_DOOR)
        sent: list[str] = []
        conns = _connections(db)

        def log(record: Any) -> None:
            if not " ".join(record.query.split()).startswith(_INTROSPECTION):
                sent.append(record.query)

        for conn in conns:
            conn.add_query_logger(log)
        await builder.build(request, FRONT_DOOR)
        await asyncio.sleep(0.05)  # releases finish their reset after the build returns
        one_build = list(sent)
        # The worst case of a service with many tenants: every connection last held another organization.
        for conn in conns:
            conn.remove_query_logger(log)
        await _hold_every_connection(db, uuid.UUID(scopes["small"]))
        sent.clear()
        for conn in conns:
            conn.add_query_logger(log)
        await builder.build(request, FRONT_DOOR)
        await asyncio.sleep(0.05)
        after_another = list(sent)
        for conn in conns:
            conn.remove_query_logger(log)

        pids = [conn.get_server_pid() for conn in _connections(db)]
        times: list[float] = []
        pg_before = sum(_cpu_ticks(p) for p in pids)
        py_before = time.process_time()
        for _ in range(BUILDS):
            started = time.perf_counter()
            await builder.build(request, FRONT_DOOR)
            times.append((time.perf_counter() - started) * 1000)
        py_ms = (time.process_time() - py_before) * 1000 / BUILDS
        await asyncio.sleep(0.05)
        pg_ms = (sum(_cpu_ticks(p) for p in pids) - pg_before) * 1000 / os.sysconf("SC_CLK_TCK") / BUILDS
        statements = sum(_statements_in(q) for q in one_build)
        by_terms = await _by_terms(db, builder, request, pids)
        return {
            **by_terms,
            "messages_per_build": len(one_build),
            "messages_per_build_after_another_tenant": len(after_another),
            "sql_statements_per_build": statements,
            "messages": _kinds(one_build),
            "messages_after_another_tenant": _kinds(after_another),
            "python_cpu_ms_per_brief": round(py_ms, 2),
            "postgres_cpu_ms_per_brief": round(pg_ms, 2),
            "cpu_ms_per_brief": round(py_ms + pg_ms, 2),
            "build_ms": seed.summary(times),
            "tokens": brief.tokens,
            "per_source_tokens": brief.per_source_tokens,
            "failed_sources": brief.failed_sources,
        }
    finally:
        await db.close()


def _term_queries() -> dict[int, list[str]]:
    """QUERIES_PER_TERMS queries of each length in TERM_COUNTS, the same in every process (seeded).

    The `before` tree has no corpus beside it: its subprocess gets the parent's queries in BENCH_BRIEF_QUERIES.
    """
    given = os.environ.get("BENCH_BRIEF_QUERIES")
    if given:
        return {int(n): list(texts) for n, texts in json.loads(given).items()}
    vocabulary, rng = seed.Vocabulary(), np.random.default_rng(45)
    return {n: seed.queries(rng, vocabulary, n, QUERIES_PER_TERMS) for n in TERM_COUNTS}


async def _cpu_of(pids: list[int], calls: int, call: Any) -> dict[str, float]:
    """Python and backend CPU per call of `call(n)` over `calls` calls, and the wall p50."""
    times: list[float] = []
    pg_before, py_before = sum(_cpu_ticks(p) for p in pids), time.process_time()
    for n in range(calls):
        started = time.perf_counter()
        await call(n)
        times.append((time.perf_counter() - started) * 1000)
    py_ms = (time.process_time() - py_before) * 1000 / calls
    await asyncio.sleep(0.05)
    pg_ms = (sum(_cpu_ticks(p) for p in pids) - pg_before) * 1000 / os.sysconf("SC_CLK_TCK") / calls
    return {"python_cpu_ms": round(py_ms, 2), "postgres_cpu_ms": round(pg_ms, 2), "cpu_ms": round(py_ms + pg_ms, 2),
            "p50_ms": seed.summary(times)["median"]}  # fmt: skip


async def _by_terms(
    db: Database, builder: DefaultContextBuilder, request: ContextRequest, pids: list[int]
) -> dict[str, Any]:
    """Issue 45's figures: the brief at 1 / 6 / 10 query terms, the brief without knowledge, the search alone."""
    from knowledge.search import search

    queries = _term_queries()
    no_knowledge = FRONT_DOOR.model_copy(update={"sources": [s for s in FRONT_DOOR.sources if s.name != "knowledge"]})
    org = request.subject.organization_id
    out: dict[str, Any] = {"brief_by_terms": {}, "knowledge_search_by_terms": {}}
    for terms, texts in queries.items():
        asked = [dataclasses.replace(request, query=q) for q in texts]
        for r in asked[:4]:
            await builder.build(r, FRONT_DOOR)

        async def brief(n: int, asked: list[ContextRequest] = asked) -> None:
            await builder.build(asked[n % len(asked)], FRONT_DOOR)

        async def alone(n: int, texts: list[str] = texts) -> None:
            await search(db, org, texts[n % len(texts)], include_platform=True, include_organization=True, limit=8)

        out["brief_by_terms"][str(terms)] = await _cpu_of(pids, PER_TERMS, brief)
        out["knowledge_search_by_terms"][str(terms)] = await _cpu_of(pids, PER_TERMS, alone)

    async def without(n: int) -> None:
        await builder.build(request, no_knowledge)

    await without(0)
    out["brief_without_knowledge"] = await _cpu_of(pids, BUILDS, without)
    return out


async def _hold_every_connection(db: Database, organization_id: uuid.UUID) -> None:
    """A tenant scope of `organization_id` on every pooled connection at once."""

    async def hold() -> None:
        async with db.tenant(organization_id) as conn:
            await conn.fetchval("SELECT 1")
            await asyncio.sleep(0.05)

    await asyncio.gather(*(hold() for _ in range(POOL)))


def _statements_in(query: str) -> int:
    """SQL statements in one message: a simple-query message may hold several (none of ours quotes a ';')."""
    return max(1, sum(1 for part in query.split(";") if part.strip()))


def _kinds(queries: list[str]) -> dict[str, int]:
    """The messages of one build by their first words, for the table in docs/decisions.md."""
    out: dict[str, int] = {}
    for q in queries:
        words = " ".join(q.split())
        key = words[:60]
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


async def _tenant_connection(url: str, org: uuid.UUID) -> asyncpg.Connection:
    """A connection of its own holding `org`'s tenant session, so its backend's CPU is the search's alone."""
    conn = await asyncpg.connect(url)
    await init_connection(conn)
    await conn.execute(f"SET ROLE ac_tenant; SET app.organization_id = '{org}'")
    return conn


async def dense_sweep(url: str) -> dict[str, Any]:
    """Candidate count x ef_search at the big tenant and the 13 % tenant: recall against exact, time and CPU."""
    scopes = await _scopes(url)
    vocabulary = seed.Vocabulary()
    rng = np.random.default_rng(5)
    texts = seed.queries(rng, vocabulary, 6, 20) + seed.queries(rng, vocabulary, 1, 10)
    vectors = [Vector(v) for v in await get_embedder(seed.MODEL).embed(texts)]
    hybrid = (
        "SELECT chunk_id FROM public.knowledge_search($1, $2, $3, true, true, 8, p_query_model => $4, "
        "p_candidates => $5, p_exact_below => $6, p_ef_search => $7, p_per_source => 3)"
    )
    dense = (
        "SELECT chunk_id FROM public.knowledge_search($1, $2, '', false, true, $3, p_query_model => $4, "
        "p_exact_below => $5, p_ef_search => $6, p_lexical_weight => 0, p_dense_weight => 1)"
    )
    out: dict[str, Any] = {}
    service = await asyncpg.connect(url)
    try:
        index = await service.fetchval("SELECT count(*) FROM agent.knowledge_chunks")
        for shape in ("big", "small"):
            org = uuid.UUID(scopes[shape])
            chunks = await service.fetchval(
                "SELECT count(*) FROM agent.knowledge_chunks c JOIN agent.knowledge_sources s "
                "ON s.id = c.source_id WHERE s.organization_id = $1",
                org,
            )
            rows: dict[str, Any] = {"chunks": chunks, "share_of_index": round(chunks / index, 3)}
            truth_conn, timed = await _tenant_connection(url, org), await _tenant_connection(url, org)
            pid = timed.get_server_pid()
            try:
                today = [  # today's answer with an exact dense half: the default 32 candidates, no index walk
                    {r["chunk_id"] for r in await truth_conn.fetch(hybrid, org, v, t, seed.MODEL, 32, 10**9, None)}
                    for t, v in zip(texts, vectors, strict=True)
                ]
                for candidates in (16, 24, 32):
                    exact_dense = [
                        {
                            r["chunk_id"]
                            for r in await truth_conn.fetch(dense, org, v, candidates, seed.MODEL, 10**9, None)
                        }
                        for v in vectors
                    ]
                    exact_top = [
                        {
                            r["chunk_id"]
                            for r in await truth_conn.fetch(hybrid, org, v, t, seed.MODEL, candidates, 10**9, None)
                        }
                        for t, v in zip(texts, vectors, strict=True)
                    ]
                    for ef in (40, 80, 200):
                        recalls = [
                            len(
                                {
                                    r["chunk_id"]
                                    for r in await truth_conn.fetch(dense, org, v, candidates, seed.MODEL, 0, ef)
                                }
                                & truth
                            )
                            / max(1, len(truth))
                            for v, truth in zip(vectors, exact_dense, strict=True)
                        ]
                        times, overlaps, against_today = [], [], []
                        ticks = _cpu_ticks(pid)
                        for _ in range(2):
                            for t, v, top, ref in zip(texts, vectors, exact_top, today, strict=True):
                                started = time.perf_counter()
                                got = await timed.fetch(hybrid, org, v, t, seed.MODEL, candidates, 0, ef)
                                times.append((time.perf_counter() - started) * 1000)
                                ids = {r["chunk_id"] for r in got}
                                overlaps.append(len(ids & top) / max(1, len(top)))
                                against_today.append(len(ids & ref) / max(1, len(ref)))
                        cpu = (_cpu_ticks(pid) - ticks) * 1000 / os.sysconf("SC_CLK_TCK") / len(times)
                        timing = seed.summary(times)
                        key = f"candidates_{candidates}_ef_{ef}"
                        rows[key] = {
                            "dense_recall": round(float(np.mean(recalls)), 3),
                            "hybrid_top8_overlap": round(float(np.mean(overlaps)), 3),
                            "top8_overlap_with_exact_32": round(float(np.mean(against_today)), 3),
                            "search_p50_ms": timing["median"],
                            "search_p95_ms": timing["p95"],
                            "postgres_cpu_ms_per_search": round(cpu, 2),
                        }
                        print(f"-- dense {shape} {key}: {rows[key]}", file=sys.stderr, flush=True)
            finally:
                await truth_conn.close()
                await timed.close()
            out[shape] = rows
    finally:
        await service.close()
    return out


async def ensure_seeded(server: str) -> str:
    """The URL of the seeded database on `server`, seeding it first when it is missing (minutes)."""
    from bench.bench_search import _seed
    from state.migrate import apply_migrations

    url = server_dsn(server, DATABASE)
    admin = await asyncpg.connect(server)
    try:
        exists = await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", DATABASE)
        if not exists:
            await admin.execute(f'CREATE DATABASE "{DATABASE}"')
    finally:
        await admin.close()
    if exists:
        conn = await asyncpg.connect(url)
        try:
            done = await conn.fetchval("SELECT to_regclass('public.bench_brief_scopes') IS NOT NULL")
        finally:
            await conn.close()
        if done:
            await _ensure_issue45_shape(url)
            return url
    await apply_migrations(url)
    db = await Database.open(load_settings(pool_min_size=2, pool_max_size=4), url=url, migrate=False)
    try:
        scopes = await _seed(db)
    finally:
        await db.close()
    doc = {
        "big": str(scopes["big"]),
        "small": str(scopes["small"]),
        "app": json.loads(json.dumps(scopes["app"], default=str)),
        "seed": scopes["seed"],
    }
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE TABLE public.bench_brief_scopes (doc text NOT NULL)")
        await conn.execute("INSERT INTO public.bench_brief_scopes VALUES ($1)", json.dumps(doc))
    finally:
        await conn.close()
    await _ensure_issue45_shape(url)
    return url


async def _ensure_issue45_shape(url: str) -> None:
    """Issue 45's shape at the big tenant, once: a fuller dossier and 10,000 memories of the asking person.

    The big tenant of `bench_search` already holds 50,000 people, 10,000 companies, 20,000 runs and a dossier of
    a profile, five offers and 300 documents; this adds the dossier's services and ideal customer profiles, and
    for the request's user 10,000 observations (`bench._memory_sets`, seed 37), 100 about the request's people
    (so the memory guard resolves refs) and 5 standing preferences, all embedded with the live model.
    """
    from context.sources.memory_vectors import live_memory_embedder
    from memory.vectors import embed_missing

    conn = await asyncpg.connect(url)
    try:
        if await conn.fetchval("SELECT to_regclass('public.bench_brief_issue45') IS NOT NULL"):
            return
        scopes = json.loads(await conn.fetchval("SELECT doc FROM public.bench_brief_scopes"))
        org, app = uuid.UUID(scopes["big"]), scopes["app"]
        user = uuid.UUID(app["users"][0])
        await _seed_issue45_rows(conn, org, user, [str(p) for p in dict.fromkeys(app["people"])])
    finally:
        await conn.close()
    db = await Database.open(load_settings(pool_min_size=1, pool_max_size=2), url=url, migrate=False)
    try:
        await embed_missing(db, org, live_memory_embedder(db))
    finally:
        await db.close()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("VACUUM ANALYZE agent.memories")
        await conn.execute("ANALYZE agent.memory_postings; ANALYZE agent.memory_embeddings")
        await conn.execute("CREATE TABLE public.bench_brief_issue45 (done boolean)")
    finally:
        await conn.close()


async def _seed_issue45_rows(conn: asyncpg.Connection, org: uuid.UUID, user: uuid.UUID, people: list[str]) -> None:
    """The dossier's services and profiles and the person's memories, in one transaction (see the caller)."""
    from bench._memory_sets import make_set

    async with conn.transaction():
        await conn.execute(
            "INSERT INTO org_services (organization_id, name, description, position) "
            "SELECT $1, 'Service ' || g, 'Wind tunnel testing of wing sections, batch ' || g, g "
            "FROM generate_series(1, 6) g",
            org,
        )
        await conn.execute(
            "INSERT INTO org_ideal_customer_profiles (organization_id, name, description, position) "
            "SELECT $1, 'Profile ' || g, 'Aerospace firms with supersonic programmes, tier ' || g, g "
            "FROM generate_series(1, 3) g",
            org,
        )
        definition = await conn.fetchval(
            "SELECT id FROM agent.definitions WHERE organization_id = $1 ORDER BY id LIMIT 1", org
        )
        memories = make_set(10_000, seed=37)
        await conn.execute(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key,"
            " text, created_at) SELECT $1::uuid, $2::uuid, 'user', $3::uuid, $3::uuid,"
            " 'user:' || $3::text || ':observation.f' || t.n, t.text, t.at"
            " FROM unnest($4::text[], $5::timestamptz[]) WITH ORDINALITY AS t (text, at, n)",
            org, definition, user, memories.texts, memories.created,
        )  # fmt: skip
        await conn.execute(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key,"
            " text, subject_refs) SELECT $1::uuid, $2::uuid, 'user', $3::uuid, $3::uuid,"
            " 'crm.person:' || p.id || ':observation.note' || g, p.id || ' asked about the boundary layer flow over"
            " the wing, note ' || g, jsonb_build_array(jsonb_build_object('kind', 'crm.person', 'id', p.id))"
            " FROM unnest($4::text[]) AS p (id), generate_series(1, 100 / cardinality($4::text[])) g",
            org, definition, user, people,
        )  # fmt: skip
        await conn.execute(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key,"
            " text) SELECT $1::uuid, $2::uuid, 'user', $3::uuid, $3::uuid,"
            " 'user:' || $3::text || ':preference.p' || g, (ARRAY['Answer in short paragraphs',"
            " 'Quote figures in SI units', 'Name the source of every number', 'Write in British English',"
            " 'Prefer tables for comparisons'])[g] FROM generate_series(1, 5) g",
            org, definition, user,
        )  # fmt: skip


def _measure_before(url: str, tmp: Path) -> dict[str, Any]:
    """`measure` with the code of BEFORE_COMMIT, in a subprocess (this file copied into that tree)."""
    tree = tmp / "before"
    tree.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE_COMMIT], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:  # no git, or a tree without the history
        return {"skipped": f"git archive {BEFORE_COMMIT} failed: {exc}", "cpu_ms_per_brief": float("nan")}
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    shutil.copy(__file__, tree / "bench" / "bench_brief_cost.py")
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_brief_cost", "--url", url, "--measure"],
        cwd=tree, env={**os.environ, "PYTHONPATH": str(tree), "BENCH_BRIEF_QUERIES": json.dumps(_term_queries())},
        check=False, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the before measurement failed ({done.returncode}): {done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


async def _after(url: str) -> dict[str, Any]:
    return await measure(url)


def _compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    keys = ("messages_per_build", "messages_per_build_after_another_tenant", "cpu_ms_per_brief")
    out: dict[str, Any] = {k: {"before": before.get(k), "after": after.get(k)} for k in keys}
    cpu_before = before.get("cpu_ms_per_brief")
    if isinstance(cpu_before, float) and cpu_before > 0:
        out["cpu_ratio_after_over_before"] = round(after["cpu_ms_per_brief"] / cpu_before, 3)
    out["goals"] = {"messages_per_build": 10, "cpu_ms_per_brief": 10, "brief_without_knowledge_cpu_ms": 5}
    return out


def _ratio(after: float | None, befores: list[float]) -> float | None:
    """`after` over the mean of the `before` figures, None when either is missing."""
    if after is None or not befores:
        return None
    return round(after / (sum(befores) / len(befores)), 3)


def goal_report(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 45's brief goals beside this run's figures at the big tenant, each with after / before."""
    from bench._goals import goal  # here: this file also runs inside the before tree

    after = result["after"]
    befores = [b for b in (result["before"], result["before_again"]) if "skipped" not in b]

    def before_of(*path: str) -> list[float]:
        out = []
        for b in befores:
            value: Any = b
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, int | float):
                out.append(float(value))
        return out

    def note(*path: str, extra: str = "") -> str:
        figure: Any = after
        for key in path:
            figure = figure[key]
        ratio = _ratio(figure if isinstance(figure, int | float) else None, before_of(*path))
        return f"before (a71b856) {before_of(*path)}, after/before {ratio}" + (f"; {extra}" if extra else "")

    rows = []
    for terms in (str(t) for t in TERM_COUNTS):
        brief = after["brief_by_terms"][terms]
        rows.append(goal(
            f"CPU per FRONT_DOOR brief, Python + PostgreSQL, {terms} query term(s)", brief["cpu_ms"], at_most=10,
            unit=" ms", note=note("brief_by_terms", terms, "cpu_ms", extra=f"Python {brief['python_cpu_ms']}, "
                                  f"PostgreSQL {brief['postgres_cpu_ms']} ms; PostgreSQL's share is the knowledge "
                                  "statement (item 1) and the memory relevance read at 10,000 memories (item 4)"),
        ))  # fmt: skip
    for terms in (str(t) for t in TERM_COUNTS):
        alone = after["knowledge_search_by_terms"][terms]
        rows.append(goal(
            f"knowledge_search CPU alone, {terms} query term(s) (knowledge.search.search: embed + statement)",
            alone["cpu_ms"], at_most=5, unit=" ms",
            note=note("knowledge_search_by_terms", terms, "cpu_ms", extra=f"Python {alone['python_cpu_ms']} "
                      f"(the query's embedding), PostgreSQL {alone['postgres_cpu_ms']} ms (the search helper's SQL)"),
        ))  # fmt: skip
    without = after["brief_without_knowledge"]
    rows += [
        goal("CPU per FRONT_DOOR brief without knowledge", without["cpu_ms"], at_most=5, unit=" ms",
             note=note("brief_without_knowledge", "cpu_ms", extra=f"Python {without['python_cpu_ms']}, "
                       f"PostgreSQL {without['postgres_cpu_ms']} ms: most of it the memory relevance read at "
                       "10,000 memories (item 4)")),
        goal("messages per FRONT_DOOR build", after["messages_per_build"], at_most=10,
             note=note("messages_per_build")),
        goal("messages per build when every connection last held another tenant",
             after["messages_per_build_after_another_tenant"], at_most=10,
             note=note("messages_per_build_after_another_tenant")),
        goal("FRONT_DOOR brief p50 at the big tenant (the bench's 12-word request)", after["build_ms"]["median"],
             at_most=10, unit=" ms", note=note("build_ms", "median")),
    ]  # fmt: skip
    return rows


def run() -> dict[str, Any]:
    """Seed once, then the before / after / before measurements of one session (and, asked, the dense sweep).

    `BENCH_BRIEF_DIR` names a folder whose embedded server (and seeded database) outlives the run, so the next
    run skips the seed; `BENCH_BRIEF_DENSE=1` adds issue 24's dense sweep (minutes).
    """
    with tempfile.TemporaryDirectory(prefix="ac-bench-brief-") as tmp:
        external = os.environ.get("DATABASE_URL")
        kept = os.environ.get("BENCH_BRIEF_DIR")
        folder = Path(kept) if kept else Path(tmp)
        server = external or embedded_server_url(folder, keep_running=True)
        try:
            url = asyncio.run(ensure_seeded(server))
            load = os.getloadavg()
            first = _measure_before(url, Path(tmp))
            after = asyncio.run(_after(url))
            shutil.rmtree(Path(tmp) / "before")
            second = _measure_before(url, Path(tmp))
            result: dict[str, Any] = {
                "load_average": [round(x, 2) for x in (*load, *os.getloadavg())],
                "before": first,
                "before_again": second,
                "after": after,
                "comparison": _compare(first, after),
            }
            if os.environ.get("BENCH_BRIEF_DENSE") == "1":
                result["dense"] = asyncio.run(dense_sweep(url))
            result["goal_report"] = goal_report(result)
            return result
        finally:
            if not external and not kept:
                stop_embedded_server(folder)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_brief_cost")
    parser.add_argument("--url", help="a server URL (seeding) or the seeded database's URL (--measure)")
    parser.add_argument("--measure", action="store_true")
    parser.add_argument("--dense", action="store_true")
    parser.add_argument("--seed-only", action="store_true")
    args = parser.parse_args(argv)
    if args.seed_only:
        print(asyncio.run(ensure_seeded(args.url)))
    elif args.dense:
        print(json.dumps(asyncio.run(dense_sweep(args.url))))
    elif args.measure:
        print(json.dumps(asyncio.run(measure(args.url)), default=str))
    else:
        print(json.dumps(run(), indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
