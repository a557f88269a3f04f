"""The dense walk is the model's HNSW index whatever the candidate count, where a walk runs (issue 45).

0103 planned its statement on every call, so the planner, knowing the walk's real LIMIT, sorted the model's
whole table instead of walking the index when the LIMIT was large for the table: a large p_candidates at a
table of 10,000-30,000 chunks (or a walk forced on a small scope). 0107's function keeps one generic plan
per session, costed for the table's size and not the call's LIMIT: at a table where a walk runs (a scope of
p_exact_below = 10,000 chunks or more) it walks the index for every candidate count. The walk is the
approximate path; the exact answer is dense_exact's, chosen by p_exact_below or when the walk comes back
short (the decision: /work/notes/search-notes.md). The plans are read with auto_explain, sent to this
session as notices.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg
import numpy as np
from pgvector import Vector
from pgvector.asyncpg import register_vector

from bench._planning_server import install_dynamic_search
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit
from tests.integration.knowledge.test_search_static import bulk_tenant

WIDE_WALK = "p_candidates => 60"
"""A large candidate count (the limit's four times is 32): the walk's LIMIT the custom plan costed as a sort."""


async def walk_plan(db: Database, org: UUID, vector: Vector, function: str) -> str:
    """The plan the search's main statement ran with (auto_explain of the nested statement), as text."""
    plans: list[str] = []
    conn = await asyncpg.connect(db.url)
    try:
        await register_vector(conn)
        conn.add_log_listener(lambda _c, message: plans.append(str(message.message)))
        await conn.execute("LOAD 'auto_explain'")
        for setting in ("log_min_duration = 0", "log_nested_statements = on", "log_level = notice"):
            await conn.execute(f"SET auto_explain.{setting}")
        async with conn.transaction():
            await conn.execute("SET LOCAL ROLE ac_tenant")
            await conn.execute("SELECT set_config('app.organization_id', $1, true)", str(org))
            await conn.fetch(
                f"SELECT chunk_id FROM public.{function}($1, $2, $3, true, true, 8, {WIDE_WALK})",
                org, vector, "contract renewal",
            )  # fmt: skip
    finally:
        await conn.close()
    walks = [p for p in plans if "dense_walk AS MATERIALIZED" in p and "Query Text:" in p]
    assert len(walks) == 1, plans
    return walks[0]


async def test_the_walk_is_the_hnsw_index_where_a_custom_plan_sorted_the_table(
    kit: Kit, factory: Factory, db: Database
) -> None:
    org = await factory.organization()
    await bulk_tenant(db, org, chunks=10_000, sources=40)  # a scope of p_exact_below chunks: the walk runs
    await kit.ingest(None, "# Platform\n\nA platform page on the common topic of renewals.")
    vector = Vector(np.asarray((await kit.lookup(FAKE).embed(["contract renewal"]))[0]))
    async with db.connection() as conn:
        await install_dynamic_search(conn)
        await conn.execute("ANALYZE")

    static = await walk_plan(db, org, vector, "knowledge_search")
    assert "Index Scan using knowledge_chunks_hnsw_test_hash_64" in static, static

    # 0103's custom plan, for the same call, sorted the model's chunks instead: the difference decided here.
    dynamic = await walk_plan(db, org, vector, "knowledge_search_dynamic")
    assert "Index Scan using knowledge_chunks_hnsw_" not in dynamic, dynamic
