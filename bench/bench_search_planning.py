"""knowledge_search planned once per model (issue 45, item 1): plans, planning, execution and CPU per call.

`run()` starts an embedded PostgreSQL of its own that preloads pg_stat_statements (`bench._planning_server`),
migrates a scratch database and seeds, under the shipped WordLlama model (its vectors of the chunks' own
text, Cranfield words, as `bench._search_seed` seeds the brief bench):

- a small tenant (3,000 chunks: the dense half is the exact scan),
- the big tenant (100,000 chunks in 1,000 sources of 100: the brief bench's big tenant; the HNSW walk),
- a switching tenant (10,000 chunks: p_exact_below's size, so the walk), which a second model
  (`bench/random-128`, 128 random dimensions) joins during the run: before it is registered, while it is
  registered with its index and function built and the tenant still searches the old model, and after the
  tenant's live model flips (with each function's scan of the new model's chunks, from auto_explain),

beside a 1,000-chunk platform scope. 0103's dynamic knowledge_search (the statement planned on every call,
`tests/integration/knowledge/knowledge_search_0103.sql`) is installed beside 0107's as
`knowledge_search_dynamic`, and the two run interleaved: per shape and query length (1 / 6 / 10 terms, and
40 at the big tenant for the prologue's lexeme statement), `ROUNDS` rounds of one block per function in
alternating order, a block being `SEARCHES` searches as the tenant on one fresh session (limit 8, both
scopes). Per block: pg_stat_statements' plans per 100 calls of the main statement (`WITH dense_walk …`), the
planning ms per call summed over every statement the search runs, the main statement's execution ms, the
backend's CPU ms per call (/proc of the session's server process: the whole call, parse to result), and
the client's wall ms per call. Figures are medians over the rounds; `ratio` is static over dynamic.

During the switch, one session searches the old model, the second model is registered from another
session (its index, function and the dispatcher written), and the same session searches on: its main
statement's plans are reported (`mid_switch_plans`: the registration's CREATE INDEX and ANALYZE invalidate
the session's cached plan once, so 2). At the big tenant, the lexeme statement's generic plan is kept for
the 10- and 40-term queries (`lexeme_plan@n`).

`.venv/bin/python -m bench.bench_search_planning`: 6-12 minutes on two shared cores, about half of it
seeding (the 100,000 chunks' postings and HNSW index). Nothing here asserts a timing; `measure(...)` with
smaller sizes serves tests/integration/knowledge/test_search_static.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector import Vector
from pgvector.asyncpg import register_vector

from bench import _search_seed as seed
from bench._goals import goal
from bench._planning_server import backend_cpu_ms, install_dynamic_search, planning_server, statement_counters
from bench._scratch import scratch_database
from state.migrate import MIGRATIONS_DIR, apply_migrations

SEARCHES = 100
ROUNDS = 2
TERMS = (1, 6, 10)
LONG_TERMS = 40
SMALL, BIG, SWITCH, PLATFORM = 3_000, 100_000, 10_000, 1_000
SECOND_MODEL, SECOND_DIMS = "bench/random-128", 128
STATIC, DYNAMIC = "knowledge_search", "knowledge_search_dynamic"
MAIN = "WITH dense_walk AS MATERIALIZED"
LEXEMES = "SELECT array_agg(t.lexeme"


def _embedder() -> seed.Embed:
    from knowledge.embedding.registry import get_embedder
    from knowledge.ingestion.pool import shared_pool

    async def embed(texts: list[str]) -> np.ndarray:
        return await shared_pool().embed(get_embedder(seed.MODEL), texts)

    return embed


async def seed_tenants(
    conn: asyncpg.Connection, rng: np.random.Generator, *, sizes: dict[str, int], embed: seed.Embed | None
) -> dict[str, uuid.UUID]:
    """One organization per named size (sources of 100 chunks, 50 words), a platform scope; the index built."""
    vocabulary = seed.Vocabulary()
    await seed.drop_index(conn)
    orgs: dict[str, uuid.UUID] = {}
    await seed.seed_scope(
        conn, rng, vocabulary, None, sources=max(PLATFORM // 100, 1), chunks_per_source=min(PLATFORM, 100),
        words=50, title="platform", embed=embed,
    )  # fmt: skip
    for name, chunks in sizes.items():
        orgs[name] = await conn.fetchval("INSERT INTO public.organizations (name) VALUES ($1) RETURNING id", name)
        per = min(chunks, 100)
        for start in range(0, chunks // per, 100):  # 100 sources a statement, as concurrent ingestions commit
            await seed.seed_scope(
                conn, rng, vocabulary, orgs[name], sources=min(100, chunks // per - start), chunks_per_source=per,
                words=50, title=f"{name} {start}", embed=embed,
            )  # fmt: skip
    await seed.build_index(conn)
    return orgs


async def register_second_model(url: str, org: uuid.UUID, rng: np.random.Generator) -> None:
    """`SECOND_MODEL` registered as a switch does: the tenant's chunks under it (random vectors), its index,
    its search function and the dispatcher rewritten; the tenant's live model unchanged."""
    conn = await asyncpg.connect(url)
    try:
        await register_vector(conn)
        await conn.execute(
            "INSERT INTO agent.embedding_models (model_id, dimensions) VALUES ($1, $2)", SECOND_MODEL, SECOND_DIMS
        )
        await conn.execute(
            "INSERT INTO agent.knowledge_switches (organization_id, from_model, to_model) VALUES ($1, $2, $3)",
            org, seed.MODEL, SECOND_MODEL,
        )  # fmt: skip
        rows = await conn.fetch(
            "SELECT c.source_id, c.ordinal, c.text, c.tokens FROM agent.knowledge_chunks c "
            "JOIN agent.knowledge_sources s ON s.id = c.source_id "
            "WHERE s.organization_id = $1 AND c.embedding_model = $2",
            org, seed.MODEL,
        )  # fmt: skip
        vectors = rng.standard_normal((len(rows), SECOND_DIMS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        await conn.copy_records_to_table(
            "knowledge_chunks", schema_name="agent",
            records=[(r["source_id"], SECOND_MODEL, r["ordinal"], r["text"], r["tokens"], Vector(v))
                     for r, v in zip(rows, vectors, strict=True)],
            columns=["source_id", "embedding_model", "ordinal", "text", "tokens", "embedding"],
        )  # fmt: skip
        await conn.execute(
            "INSERT INTO agent.knowledge_source_models (source_id, embedding_model, status, chunk_count, "
            "embedded_count, pending_since) SELECT c.source_id, $2, 'ready', count(*), count(*), NULL "
            "FROM agent.knowledge_chunks c WHERE c.embedding_model = $2 AND c.source_id IN "
            "(SELECT id FROM agent.knowledge_sources WHERE organization_id = $1) GROUP BY c.source_id",
            org, SECOND_MODEL,
        )  # fmt: skip
        await conn.fetchval("SELECT agent.ensure_embedding_model_index($1)", SECOND_MODEL)
        await conn.execute("ANALYZE agent.knowledge_chunks")
    finally:
        await conn.close()


async def flip(url: str, org: uuid.UUID) -> None:
    """The tenant's live model becomes `SECOND_MODEL` (the switch's flip, without its readiness checks)."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "INSERT INTO public.knowledge_settings (organization_id, active_embedding_model) VALUES ($1, $2)",
            org, SECOND_MODEL,
        )  # fmt: skip
        await conn.execute("DELETE FROM agent.knowledge_switches WHERE organization_id = $1", org)
    finally:
        await conn.close()


def _per_call(rows: list[asyncpg.Record], function: str, calls: int) -> dict[str, Any]:
    top = [r for r in rows if r["toplevel"] and f"public.{function}(" in r["head"]]
    main = [r for r in rows if not r["toplevel"] and r["head"].startswith(MAIN)]
    lexemes = [r for r in rows if not r["toplevel"] and r["head"].startswith(LEXEMES)]
    nested = [r for r in rows if not r["toplevel"]]
    return {
        "main_calls": sum(r["calls"] for r in main),
        "main_plans_per_100": round(100 * sum(r["plans"] for r in main) / max(sum(r["calls"] for r in main), 1), 2),
        "main_exec_ms": round(sum(r["total_exec_time"] for r in main) / calls, 3),
        "plan_ms": round(sum(r["total_plan_time"] for r in nested) / calls, 3),
        "top_exec_ms": round(sum(r["total_exec_time"] for r in top) / calls, 3),
        "lexemes_plans": sum(r["plans"] for r in lexemes),
        "lexemes_exec_ms": round(sum(r["total_exec_time"] for r in lexemes) / calls, 3),
    }


async def block(
    url: str, org: uuid.UUID, function: str, texts: list[str], vectors: list[Vector], *, midway: Any = None
) -> dict[str, Any]:
    """`len(texts)` searches as the tenant on one fresh session; its counters per call (`midway()` halfway)."""
    conn = await asyncpg.connect(url)
    try:
        await register_vector(conn)
        pid = await conn.fetchval("SELECT pg_backend_pid()")
        await conn.execute("SELECT pg_stat_statements_reset()")
        await conn.execute("SET ROLE ac_tenant")
        await conn.execute("SELECT set_config('app.organization_id', $1, false)", str(org))
        sql = f"SELECT chunk_id FROM public.{function}($1, $2, $3, true, true, 8)"
        cpu, wall = 0.0, 0.0
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            if midway is not None and i == len(texts) // 2:
                await midway()
            cpu_before, started = backend_cpu_ms(pid), time.perf_counter()
            await conn.fetch(sql, org, vector, text)
            wall += time.perf_counter() - started
            cpu += backend_cpu_ms(pid) - cpu_before
        await conn.execute("RESET ROLE")
        rows = await statement_counters(conn, "knowledge")
    finally:
        await conn.close()
    n = len(texts)
    return {"wall_ms": round(wall * 1000 / n, 3), "cpu_ms": round(cpu / n, 3), **_per_call(rows, function, n)}


async def statement_plan(
    url: str, org: uuid.UUID, text: str, vector: Vector, head: str, *, function: str = STATIC
) -> list[str]:
    """The plan of the search's nested statement starting `head`, on its session's seventh call (generic by
    then under any plan cache mode): auto_explain's text, sent to this session as a notice, line by line."""
    plans: list[str] = []
    conn = await asyncpg.connect(url)
    try:
        await register_vector(conn)
        conn.add_log_listener(lambda _c, message: plans.append(str(message.message)))
        await conn.execute("LOAD 'auto_explain'")
        await conn.execute("SET ROLE ac_tenant")
        await conn.execute("SELECT set_config('app.organization_id', $1, false)", str(org))
        sql = f"SELECT chunk_id FROM public.{function}($1, $2, $3, true, true, 8)"
        for _ in range(6):
            await conn.fetch(sql, org, vector, text)
        await conn.execute("RESET ROLE")
        for setting in ("log_min_duration = 0", "log_nested_statements = on", "log_level = notice"):
            await conn.execute(f"SET auto_explain.{setting}")
        await conn.execute("SET ROLE ac_tenant")
        await conn.fetch(sql, org, vector, text)
    finally:
        await conn.close()
    found = [p for p in plans if "Query Text:" in p and p.split("Query Text:", 1)[1].lstrip().startswith(head)]
    return found[0].split("\n") if found else plans[:1]


def _median(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: round(statistics.median(b[k] for b in blocks), 3) for k in blocks[0]}


async def compare(url: str, org: uuid.UUID, texts: list[str], vectors: list[Vector], *, rounds: int) -> dict[str, Any]:
    """Static and dynamic, interleaved (the order alternating per round): medians per function and ratios."""
    runs: dict[str, list[dict[str, Any]]] = {STATIC: [], DYNAMIC: []}
    for r in range(rounds):
        for function in (STATIC, DYNAMIC) if r % 2 == 0 else (DYNAMIC, STATIC):
            runs[function].append(await block(url, org, function, texts, vectors))
    static, dynamic = _median(runs[STATIC]), _median(runs[DYNAMIC])
    ratio = {k: round(static[k] / dynamic[k], 3) for k in ("wall_ms", "cpu_ms", "top_exec_ms") if dynamic[k]}
    return {"static_0107": static, "dynamic_0103": dynamic, "static_over_dynamic": ratio}


async def _queries(
    terms: int, n: int, rng: np.random.Generator, *, dims: int | None = None
) -> tuple[list[str], list[Vector]]:
    texts = seed.queries(rng, seed.Vocabulary(), terms, n)
    if dims is not None:
        raw = rng.standard_normal((n, dims)).astype(np.float32)
        return texts, [Vector(v / np.linalg.norm(v)) for v in raw]
    from knowledge.embedding.registry import get_embedder

    return texts, [Vector(v) for v in await get_embedder(seed.MODEL).embed(texts)]


async def measure_shapes(
    url: str, orgs: dict[str, uuid.UUID], *, searches: int, rounds: int, terms: tuple[int, ...], long_terms: int | None
) -> dict[str, Any]:
    rng = np.random.default_rng(4545)
    out: dict[str, Any] = {}
    for shape in ("small", "big"):
        if shape not in orgs:
            continue
        lengths = (*terms, long_terms) if shape == "big" and long_terms else terms
        for n in lengths:
            texts, vectors = await _queries(n, searches, rng)
            out[f"{shape}@{n}"] = await compare(url, orgs[shape], texts, vectors, rounds=rounds)
            if shape == "big" and n >= 10:  # the prologue's lexeme statement at a long query: its generic plan
                plan = await statement_plan(url, orgs[shape], texts[0], vectors[0], LEXEMES)
                out[f"lexeme_plan@{n}"] = [line for line in plan if "->" in line or "Index Cond" in line]
            print(shape, n, json.dumps(out[f"{shape}@{n}"]), file=sys.stderr, flush=True)
    if "switch" in orgs:
        org = orgs["switch"]
        texts, vectors = await _queries(6, searches, rng)
        out["switch_before@6"] = await compare(url, org, texts, vectors, rounds=rounds)

        async def register() -> None:
            await register_second_model(url, org, rng)

        mid = await block(url, org, STATIC, texts, vectors, midway=register)
        out["mid_switch_plans"] = mid["main_plans_per_100"]
        out["switch_during@6"] = await compare(url, org, texts, vectors, rounds=rounds)
        await flip(url, org)
        texts2, vectors2 = await _queries(6, searches, rng, dims=SECOND_DIMS)
        out["switch_after@6"] = await compare(url, org, texts2, vectors2, rounds=rounds)
        for function in (STATIC, DYNAMIC):  # how each walks the new model's chunks: the chunks' scan nodes
            plan = await statement_plan(url, org, texts2[0], vectors2[0], MAIN, function=function)
            out[f"switch_after_chunk_scans_{function}"] = [line.strip() for line in plan if "knowledge_chunks" in line]
        for key in ("switch_before@6", "switch_during@6", "switch_after@6"):
            print(key, json.dumps(out[key]), file=sys.stderr, flush=True)
    return out


def goal_rows(shapes: dict[str, Any], terms: tuple[int, ...]) -> list[dict[str, Any]]:
    rows = []
    for n in terms:
        key = f"big@{n}"
        if key not in shapes:
            continue
        s, d = shapes[key]["static_0107"], shapes[key]["dynamic_0103"]
        note = (
            f"backend CPU per call, the whole call (0103's dynamic statement: {d['cpu_ms']:g} ms, ratio "
            f"{shapes[key]['static_over_dynamic'].get('cpu_ms', float('nan')):g}); planning is now "
            f"{s['plan_ms']:g} ms a call, what is left is executing the main statement (the HNSW walk at "
            f"ef_search 200 and the BM25 postings at 100,000 chunks: {s['main_exec_ms']:g} ms server time "
            f"at load {os.getloadavg()[0]:.1f} on two shared cores)"
        )
        rows.append(goal(f"knowledge_search CPU alone, {n} term(s), big tenant", s["cpu_ms"], at_most=5, unit=" ms",
                         note=note))  # fmt: skip
        rows.append(goal(f"plans of the search statement per 100 calls, {n} term(s), big tenant",
                         s["main_plans_per_100"], at_most=1, note=f"0103's: {d['main_plans_per_100']:g}"))  # fmt: skip
    return rows


async def measure(
    sizes: dict[str, int] | None = None,
    *,
    searches: int = SEARCHES,
    rounds: int = ROUNDS,
    terms: tuple[int, ...] = TERMS,
    long_terms: int | None = LONG_TERMS,
    embed: bool = True,
    migrations: Path = MIGRATIONS_DIR,
) -> dict[str, Any]:
    """Seed, search interleaved, report (a JSON-able dict with `goal_report`); smaller `sizes` for tests."""
    sizes = {"small": SMALL, "big": BIG, "switch": SWITCH} if sizes is None else sizes
    rng = np.random.default_rng(45)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ac-plan-") as folder:
        async with planning_server(Path(folder)) as server, scratch_database(server, "ac_plan") as url:
            await apply_migrations(url, migrations)
            conn = await asyncpg.connect(url)
            try:
                preload = await conn.fetchval("SHOW shared_preload_libraries")
                await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                await register_vector(conn)
                orgs = await seed_tenants(conn, rng, sizes=sizes, embed=_embedder() if embed else None)
                await install_dynamic_search(conn)
            finally:
                await conn.close()
            seeded_s = time.perf_counter() - started
            shapes = await measure_shapes(
                url, orgs, searches=searches, rounds=rounds, terms=terms, long_terms=long_terms
            )
    return {
        "sizes": sizes,
        "searches_per_block": searches,
        "rounds": rounds,
        "shared_preload_libraries": preload,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "seed_s": round(seeded_s, 1),
        "shapes": shapes,
        "goal_report": goal_rows(shapes, terms),
    }


def run() -> dict[str, Any]:
    """The whole bench at its default sizes (what `make bench` runs)."""
    return asyncio.run(measure())


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
