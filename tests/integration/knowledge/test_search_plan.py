"""The tenant-role plan at 20,000 chunks reaches its candidates through indexes, and the new tables keep RLS."""

from __future__ import annotations

from uuid import UUID

import asyncpg
from pgvector import Vector

from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

CHUNKS = 20_000


async def _bulk_tenant(db: Database, org: UUID, *, sources: int = 40) -> None:
    """CHUNKS ready chunks over `sources` ready sources, written in SQL; 'common' is in every chunk."""
    per_source = CHUNKS // sources
    async with db.connection() as conn:
        rows = await conn.fetch(
            "INSERT INTO agent.knowledge_sources (organization_id, kind, title, object_key, content_sha256, "
            "byte_size, status, pending_since) SELECT $1, 'upload', 'bulk ' || n, 'k', "
            "md5(n::text) || md5(n::text), 1, 'ready', NULL FROM generate_series(1, $2) AS n RETURNING id",
            org,
            sources,
        )
        ids = [r["id"] for r in rows]
        await conn.execute(
            "INSERT INTO agent.knowledge_source_models (source_id, embedding_model, status, chunk_count, "
            "embedded_count, pending_since) SELECT s, $2, 'ready', $3, $3, NULL FROM unnest($1::uuid[]) AS s",
            ids, FAKE, per_source,
        )  # fmt: skip
        await conn.execute(
            "INSERT INTO agent.knowledge_chunks (source_id, embedding_model, ordinal, text, tokens) "
            "SELECT s, $2, o, format('common term%s word%s topic%s filler', o % 97, o % 13, (o * 7) % 501), 6 "
            "FROM unnest($1::uuid[]) AS s CROSS JOIN generate_series(0, $3 - 1) AS o",
            ids, FAKE, per_source,
        )  # fmt: skip
        await conn.execute("ANALYZE")


async def test_the_tenant_role_plan_at_20000_chunks_never_scans_the_chunk_table(
    kit: Kit, factory: Factory, db: Database
) -> None:
    org = await factory.organization()
    await _bulk_tenant(db, org)
    await kit.ingest(None, "a platform page on the common topic")
    query = Vector((await kit.lookup(FAKE).embed(["common topic"]))[0])
    plans: list[str] = []

    def listener(_conn: object, message: object) -> None:
        plans.append(str(getattr(message, "message", message)))

    async with db.connection() as conn, conn.transaction():
        # auto_explain prints the plan of every statement the function runs, nested ones included.
        await conn.execute("LOAD 'auto_explain'")
        await conn.execute("SET LOCAL auto_explain.log_min_duration = 0")
        await conn.execute("SET LOCAL auto_explain.log_nested_statements = on")
        await conn.execute("SET LOCAL auto_explain.log_level = 'notice'")
        await conn.execute("SET LOCAL ROLE ac_tenant")
        await conn.execute("SELECT set_config('app.organization_id', $1, true)", str(org))
        conn.add_log_listener(listener)
        try:
            rows = await conn.fetch(
                "SELECT * FROM public.knowledge_search($1, $2, 'common term5 word3 topic17 filler', true, true, 8)",
                org, query,
            )  # fmt: skip
        finally:
            conn.remove_log_listener(listener)
    plan = "\n".join(plans)
    assert rows and all(r["lexical_rank"] is not None for r in rows[:3])
    assert "knowledge_postings" in plan and "Index Scan" in plan
    assert "Seq Scan on knowledge_chunks" not in plan, plan
    assert "Seq Scan on knowledge_postings" not in plan, plan


async def test_a_user_key_caller_reads_only_platform_and_own_statistics_and_postings(
    kit: Kit, factory: Factory, db: Database
) -> None:
    a = await factory.organization()
    b = await factory.organization()
    await kit.ingest(a, "a's own lifecycle notes")
    await kit.ingest(b, "b's secret lifecycle notes")
    await kit.ingest(None, "platform lifecycle page")
    tables = {
        "agent.knowledge_lexical_scopes": "SELECT DISTINCT organization_id AS o FROM agent.knowledge_lexical_scopes",
        "agent.knowledge_searchable": "SELECT DISTINCT sc.organization_id AS o FROM agent.knowledge_searchable t "
        "JOIN agent.knowledge_lexical_scopes sc ON sc.id = t.scope_id",
        "agent.knowledge_lexemes": "SELECT DISTINCT sc.organization_id AS o FROM agent.knowledge_lexemes t "
        "JOIN agent.knowledge_lexical_scopes sc ON sc.id = t.scope_id",
        "agent.knowledge_postings": "SELECT DISTINCT sc.organization_id AS o FROM agent.knowledge_postings t "
        "JOIN agent.knowledge_lexical_scopes sc ON sc.id = t.scope_id",
    }
    for role in ("authenticated", "ac_tenant"):
        async with db.connection() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL ROLE {role}")
            await conn.execute("SELECT set_config('app.organization_id', $1, true)", str(a))
            for table, sql in tables.items():
                assert {r["o"] for r in await conn.fetch(sql)} == {a, None}, (role, table)
            secret = await conn.fetchval("SELECT count(*) FROM agent.knowledge_lexemes WHERE lexeme = 'secret'")
            assert secret == 0
            for table in tables:  # and nobody but the service writes them
                try:
                    async with conn.transaction():
                        await conn.execute(f"DELETE FROM {table}")
                except asyncpg.InsufficientPrivilegeError:
                    continue
                raise AssertionError(f"{role} could delete from {table}")
    async with db.connection() as conn:  # the service role sees every scope
        assert {r["o"] for r in await conn.fetch(tables["agent.knowledge_lexemes"])} == {a, b, None}
