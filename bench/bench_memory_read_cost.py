"""What the memory relevance read costs (issue 43, item 5; issue 45, item 4): CPU and p50, fresh and warm, recall.

For each size (one person's 1,000 and 10,000 generated observations, `bench._memory_sets`, beside five
people of 200 in the same organization, every memory embedded with the platform's live model, WordLlama)
it asks the set's 60 questions through `memory.repository.fetch_relevant_memories` (the `memory` source's
read at the Front Door: no definition, limit 20, 80 candidates per list), the question vectors embedded
beforehand, and the same questions through the statement commit a71b856 shipped
(`bench/_memory_read_a71b856.sql`: the exact dense scan, before migration 0110), interleaved, and reports
for each (`after`, `before`) and their CPU ratio:

- `fresh`: a new connection per question, one read each (its first plan, its backend's caches cold; the
  first read on a connection also loads the text-search dictionary, about 10 ms once per connection);
- `after_20_calls`: one connection per statement that already ran it 20 times (PostgreSQL caches a generic
  plan for a prepared statement after five), then each question twice, the two statements in alternating
  blocks of 60;
- for each, the wall p50 and the backend's CPU per read (utime + stime of its process in /proc, before
  and after; the server runs on this machine), and `recall`: the share of the exact read's top 20
  (`fetch_relevant_memories_exact`, migration 0101, planned custom) that the read returns.

`front_door` builds the Front Door brief (the shipped policy, every source) for the 10,000-memory person
with the memory spec's order `recency` and `relevance`, 60 questions each after 20 warm-up builds, on a pool
of one connection (so every build reuses one backend and its cached plans): Python CPU and that backend's
CPU per brief, and their difference. Nothing here asserts.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

from bench._goals import goal
from bench._scratch import bench_server, scratch_database
from bench.bench_memory_relevance import NEIGHBOUR_SIZE, NEIGHBOURS, _seed_person
from context.builder import DefaultContextBuilder
from context.models import ContextPolicy, ContextRequest, ContextSubject
from context.packer import ContextPacker
from context.policies import FRONT_DOOR
from context.sources import default_registry
from context.sources.memory_vectors import live_memory_embedder, relevance_query
from knowledge.embedding.registry import get_embedder
from memory.models import RelevanceQuery
from memory.repository import fetch_relevant_memories, fetch_relevant_memories_exact
from memory.vectors import embed_missing
from state.db import Database, init_connection
from state.migrate import apply_migrations
from state.queries import Queries
from state.settings import load_settings

SIZES = (1_000, 10_000)
LIMIT = 20
WARM_CALLS = 20
BRIEFS = 60
BEFORE = Queries(Path(__file__).with_name("_memory_read_a71b856.sql"))["fetch_relevant_memories_a71b856"]
"""The read as a71b856 shipped it: the exact dense scan of the person's vectors (before migration 0110)."""

Read = Callable[[asyncpg.Connection, dict[str, Any], RelevanceQuery], Awaitable[list[uuid.UUID]]]


def _ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _ms(ticks: int, calls: int) -> float:
    return round(ticks * 1000 / os.sysconf("SC_CLK_TCK") / max(calls, 1), 2)


async def _connect(db_url: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(db_url)
    await init_connection(conn)
    return conn


async def _seed(db: Database, db_url: str, size: int) -> dict[str, Any]:
    conn = await asyncpg.connect(db_url)
    try:
        org = await conn.fetchval("INSERT INTO organizations (name) VALUES ($1) RETURNING id", f"set {size}")
        definition = await conn.fetchval(
            "INSERT INTO agent.definitions (organization_id, definition_kind, name, status)"
            " VALUES ($1, 'agent', 'Agent', 'published') RETURNING id",
            org,
        )
        user, _, memories = await _seed_person(conn, org, definition, size, seed=37)
        for n in range(NEIGHBOURS):
            neighbour, _, _ = await _seed_person(conn, org, definition, NEIGHBOUR_SIZE, seed=1000 + n)
    finally:
        await conn.close()
    await embed_missing(db, org, live_memory_embedder(db))
    async with db.connection() as c:
        for table in ("memories", "memory_postings", "memory_embeddings"):
            await c.execute(f"VACUUM ANALYZE agent.{table}")
    return {"org": org, "user": user, "neighbour": neighbour, "questions": [q for q, _ in memories.questions]}


async def _read_after(conn: asyncpg.Connection, where: dict[str, Any], query: RelevanceQuery) -> list[uuid.UUID]:
    return [r.memory.id for r in await fetch_relevant_memories(conn, **where, query=query)]


async def _read_before(conn: asyncpg.Connection, where: dict[str, Any], query: RelevanceQuery) -> list[uuid.UUID]:
    rows = await conn.fetch(
        BEFORE,
        where["organization_id"], where["definition_id"], where["user_id"], where["limit"], query.text, query.vector,
        query.model, where["candidates"], where["personal"], query.dense_weight, query.lexical_weight, query.k1,
        query.b, query.lexical_depth,
    )  # fmt: skip
    return [r["id"] for r in rows]


READS: dict[str, Read] = {"after": _read_after, "before": _read_before}


async def _read_cost(db: Database, db_url: str, seeded: dict[str, Any]) -> dict[str, Any]:
    org, user, questions = seeded["org"], seeded["user"], seeded["questions"]
    queries: list[RelevanceQuery] = [await relevance_query(db, org, q, get_embedder) for q in questions]
    where: dict[str, Any] = {"organization_id": org, "definition_id": None, "user_id": user, "limit": LIMIT,
                             "candidates": LIMIT * 4, "personal": False}  # fmt: skip
    exact_conn = await _connect(db_url)
    try:
        await exact_conn.execute("SET plan_cache_mode = force_custom_plan")
        exact = [[r.memory.id for r in await fetch_relevant_memories_exact(exact_conn, **where, query=q)]
                 for q in queries]  # fmt: skip
    finally:
        await exact_conn.close()

    def recall(got: list[list[uuid.UUID]]) -> float:
        shares = [len(set(g) & set(e)) / len(e) for g, e in zip(got, exact, strict=True) if e]
        return round(statistics.mean(shares), 4)

    walls: dict[str, list[float]] = {name: [] for name in READS}
    ticks = dict.fromkeys(READS, 0)
    got: dict[str, list[list[uuid.UUID]]] = {name: [] for name in READS}
    for n, query in enumerate(queries):  # fresh: a new connection per read, the two statements alternating first
        for name in sorted(READS, reverse=n % 2 == 1):
            conn = await _connect(db_url)
            try:
                pid = conn.get_server_pid()
                t0, w0 = _ticks(pid), time.perf_counter()
                ids = await READS[name](conn, where, query)
                walls[name].append((time.perf_counter() - w0) * 1000)
                ticks[name] += _ticks(pid) - t0
                got[name].append(ids)
            finally:
                await conn.close()
    out: dict[str, Any] = {name: {"fresh": {"p50_ms": round(statistics.median(walls[name]), 2),
                                            "cpu_ms": _ms(ticks[name], len(queries)), "recall": recall(got[name])}}
                           for name in READS}  # fmt: skip
    conns = {name: await _connect(db_url) for name in READS}
    try:
        for name, conn in conns.items():
            for n in range(WARM_CALLS):
                await READS[name](conn, where, queries[n % len(queries)])
        walls = {name: [] for name in READS}
        ticks = dict.fromkeys(READS, 0)
        for block in range(2):  # alternating blocks of the 60 questions
            for name in sorted(READS, reverse=block % 2 == 1):
                conn, pid, got[name] = conns[name], conns[name].get_server_pid(), []
                for query in queries:
                    t0, w0 = _ticks(pid), time.perf_counter()
                    got[name].append(await READS[name](conn, where, query))
                    walls[name].append((time.perf_counter() - w0) * 1000)
                    ticks[name] += _ticks(pid) - t0
    finally:
        for conn in conns.values():
            await conn.close()
    for name in READS:
        figures = {"p50_ms": round(statistics.median(walls[name]), 2), "cpu_ms": _ms(ticks[name], len(walls[name]))}
        out[name]["after_20_calls"] = {**figures, "recall": recall(got[name])}
    out["cpu_ratio_after_to_before"] = {
        mode: round(out["after"][mode]["cpu_ms"] / out["before"][mode]["cpu_ms"], 3)
        if out["before"][mode]["cpu_ms"]
        else None
        for mode in ("fresh", "after_20_calls")
    }
    return out


async def _front_door(db_url: str, seeded: dict[str, Any], person: str) -> dict[str, Any]:
    """The Front Door brief's CPU with the memory spec by recency and by relevance, on one backend."""
    db = await Database.open(load_settings(pool_min_size=1, pool_max_size=1), url=db_url, migrate=False)
    try:
        async with db.connection() as conn:
            pid = await conn.fetchval("SELECT pg_backend_pid()")
        builder = DefaultContextBuilder(default_registry(db), ContextPacker(), source_timeout_s=30.0)
        subject = ContextSubject(organization_id=seeded["org"], user_id=seeded[person], definition_id=None)
        out: dict[str, Any] = {}
        for order in ("recency", "relevance"):
            sources = [s.model_copy(update={"options": {"order": order}}) if s.name == "memory" else s
                       for s in FRONT_DOOR.sources]  # fmt: skip
            policy = ContextPolicy(sources=sources, total_token_budget=FRONT_DOOR.total_token_budget)
            questions = seeded["questions"]
            for n in range(WARM_CALLS):
                await builder.build(ContextRequest(subject=subject, query=questions[n % 60], entities=[]), policy)
            walls: list[float] = []
            t0, c0 = _ticks(pid), time.process_time()
            for n in range(BRIEFS):
                w0 = time.perf_counter()
                await builder.build(ContextRequest(subject=subject, query=questions[n % 60], entities=[]), policy)
                walls.append((time.perf_counter() - w0) * 1000)
            python_ms = (time.process_time() - c0) * 1000 / BRIEFS
            postgres_ms = _ms(_ticks(pid) - t0, BRIEFS)
            out[order] = {"p50_ms": round(statistics.median(walls), 2), "python_cpu_ms": round(python_ms, 2),
                          "postgres_cpu_ms": postgres_ms, "cpu_ms": round(python_ms + postgres_ms, 2)}  # fmt: skip
        out["relevance_minus_recency_cpu_ms"] = round(out["relevance"]["cpu_ms"] - out["recency"]["cpu_ms"], 2)
        return out
    finally:
        await db.close()


async def _main(server: str, sizes: tuple[int, ...]) -> dict[str, Any]:
    async with scratch_database(server, "ac_bench_memread") as db_url:
        await apply_migrations(db_url)
        db = await Database.open(load_settings(pool_min_size=1, pool_max_size=2), url=db_url, migrate=False)
        try:
            seeded = {size: await _seed(db, db_url, size) for size in sizes}
            reads = {str(size): await _read_cost(db, db_url, seeded[size]) for size in sizes}
        finally:
            await db.close()
        front = {
            f"person_of_{max(sizes)}": await _front_door(db_url, seeded[max(sizes)], "user"),
            f"person_of_{NEIGHBOUR_SIZE}": await _front_door(db_url, seeded[max(sizes)], "neighbour"),
        }
    return {
        "goal_report": _goals(reads, front),
        "load_average": os.getloadavg(),
        "reads": reads,
        "front_door": front,
        "front_door_tenant": f"one person of {max(sizes)} memories and {NEIGHBOURS} of {NEIGHBOUR_SIZE}",
    }


def _goals(reads: dict[str, Any], front: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    limits = {
        "fresh": "a new connection's first read loads the text-search dictionary (about 10 ms, once per connection)",
        "after_20_calls": "the lexical half: BM25 statistics and every posting of the question's lexemes counted",
    }
    for size in sorted(reads, key=int, reverse=True):  # 10,000 first, 1,000 beside it
        for mode in ("after_20_calls", "fresh"):
            after, before = reads[size]["after"][mode], reads[size]["before"][mode]
            ratio = reads[size]["cpu_ratio_after_to_before"][mode]
            beside = f"before (a71b856) {before['cpu_ms']} ms, after/before {ratio}"
            met = after["cpu_ms"] <= 10
            rows.append(goal(f"memory relevance read CPU, {int(size):,} memories, {mode}", after["cpu_ms"], at_most=10,
                             unit=" ms", note=beside if met else f"{beside}; limited by {limits[mode]}"))  # fmt: skip
            rows.append(goal(f"memory relevance recall of the exact read's top 20, {int(size):,} memories, {mode}",
                             after["recall"], at_least=0.95))  # fmt: skip
        rows.append(goal(f"memory relevance read p50, {int(size):,} memories, after_20_calls",
                         reads[size]["after"]["after_20_calls"]["p50_ms"], at_most=30, unit=" ms"))  # fmt: skip
    for person, figures in front.items():
        rows.append(goal(f"front door brief CPU, relevance minus recency, {person}",
                         figures["relevance_minus_recency_cpu_ms"], at_most=5, unit=" ms",
                         note="the relevance read's own CPU (rows above); recency is an index range"))  # fmt: skip
    return rows


def run(sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    """Seed each set, measure the read fresh and after 20 calls, and the Front Door brief by each order."""
    with tempfile.TemporaryDirectory(prefix="ac-bench-memread-") as tmp, bench_server(Path(tmp)) as server:
        return asyncio.run(_main(server, sizes))


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(tuple(int(a) for a in sys.argv[1:]) or SIZES), indent=2, default=str))
