"""One search function per registered model (migrations/0107): written at registration, gone with the model.

Registration (agent.ensure_embedding_model_index, which every registration calls) writes the model's
function and rewrites the dispatcher; deleting the model's agent.embedding_models row drops the function,
the index and the dispatcher's branch (a trigger); the dispatcher refuses a model it has no branch for with
KS004. Registration runs as the service role, the role DATABASE_URL names, which is also the role that
applied the migrations (state/db.py migrates on open): a role that owns the schema, not necessarily a
superuser. The last test hands the migrated schema to such a role and registers a model as it.
"""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest
from pgvector import Vector

from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

SHIPPED = "local/wordllama-l2-supercat-256"
"""A model every database registers (migrations/0010)."""
SERVICE = "ac_service_probe"
"""A role that owns the migrated schema and is no superuser, as a managed deployment's service role is."""

DISPATCH = "SELECT chunk_id FROM agent.knowledge_search_by_model($1" + ", NULL" * 30 + ")"
"""The dispatcher with only the model named (a model it has a branch for would then search nothing)."""


async def function_exists(conn: asyncpg.Connection, model: str) -> bool:
    return bool(
        await conn.fetchval(
            "SELECT to_regproc('agent.' || quote_ident(agent.knowledge_search_function_name($1))) IS NOT NULL", model
        )
    )


async def dispatched_models(conn: asyncpg.Connection) -> str:
    return str(await conn.fetchval("SELECT prosrc FROM pg_proc WHERE oid = 'agent.knowledge_search_by_model'::regproc"))


async def test_registering_a_model_writes_its_function_and_deleting_its_row_drops_it(db: Database) -> None:
    model = "test/retired-16"
    async with db.connection() as conn:
        await conn.execute("INSERT INTO agent.embedding_models (model_id, dimensions) VALUES ($1, 16)", model)
        index = await conn.fetchval("SELECT agent.ensure_embedding_model_index($1)", model)
        assert await function_exists(conn, model)
        assert f"WHEN '{model}'" in await dispatched_models(conn)
        assert await conn.fetch(DISPATCH, model) == []  # its branch runs (no scopes: nothing found)

        await conn.execute("DELETE FROM agent.embedding_models WHERE model_id = $1", model)

        assert not await function_exists(conn, model)
        assert await conn.fetchval("SELECT to_regclass('agent.' || quote_ident($1))", index) is None
        assert f"WHEN '{model}'" not in await dispatched_models(conn)
        with pytest.raises(asyncpg.PostgresError) as refused:
            await conn.fetch(DISPATCH, model)
        assert refused.value.sqlstate == "KS004"
        assert f"WHEN '{SHIPPED}'" in await dispatched_models(conn)  # the other models keep their branches


async def test_the_dispatcher_refuses_a_model_without_a_function_with_ks004(db: Database) -> None:
    async with db.connection() as conn:
        with pytest.raises(asyncpg.PostgresError) as unknown:
            await conn.fetch(DISPATCH, "test/never-registered")
        assert unknown.value.sqlstate == "KS004"
        # A registered model whose function was dropped is refused too, until registration writes it again.
        assert await conn.fetchval("SELECT agent.drop_knowledge_search_function($1)", SHIPPED) is True
        with pytest.raises(asyncpg.PostgresError) as dropped:
            await conn.fetch(DISPATCH, SHIPPED)
        assert dropped.value.sqlstate == "KS004"
        await conn.fetchval("SELECT agent.ensure_embedding_model_index($1)", SHIPPED)
        assert await conn.fetch(DISPATCH, SHIPPED) == []


HAND_OVER = f"""
DO $$
DECLARE r record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SERVICE}') THEN
        CREATE ROLE {SERVICE} NOLOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
    EXECUTE format('GRANT ac_tenant TO {SERVICE}');
    ALTER SCHEMA agent OWNER TO {SERVICE};
    ALTER SCHEMA public OWNER TO {SERVICE};
    FOR r IN SELECT c.oid::regclass AS rel FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname IN ('agent', 'public') AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
                AND c.relowner = current_user::regrole
                AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                                   AND d.objid = c.oid AND d.deptype IN ('e', 'a', 'i')) LOOP
        EXECUTE format('ALTER TABLE %s OWNER TO {SERVICE}', r.rel);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS fn FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
              WHERE n.nspname IN ('agent', 'public') AND p.proowner = current_user::regrole
                AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                                   AND d.objid = p.oid AND d.deptype = 'e') LOOP
        EXECUTE format('ALTER ROUTINE %s OWNER TO {SERVICE}', r.fn);
    END LOOP;
END
$$
"""
"""The migrated schema handed to SERVICE, as if SERVICE had applied the migrations (extensions' objects excepted)."""


async def test_the_service_role_registers_a_model_and_the_tenant_searches_through_its_dispatcher(
    kit: Kit, factory: Factory, db: Database
) -> None:
    org = await factory.organization()
    await kit.ingest(org, "# Renewals\n\nThe customer contract renewal lifecycle starts ninety days out.")
    model = "test/service-16"
    async with db.connection() as conn:
        await conn.execute(HAND_OVER)
        assert not await conn.fetchval(f"SELECT rolsuper FROM pg_roles WHERE rolname = '{SERVICE}'")
        async with conn.transaction():
            await conn.execute(f"SET LOCAL ROLE {SERVICE}")
            await conn.execute("INSERT INTO agent.embedding_models (model_id, dimensions) VALUES ($1, 16)", model)
            await conn.fetchval("SELECT agent.ensure_embedding_model_index($1)", model)
        assert await function_exists(conn, model)
        owner = await conn.fetchval(
            "SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'agent.knowledge_search_by_model'::regproc"
        )
        assert owner == SERVICE

    vector = Vector(np.asarray((await kit.lookup(FAKE).embed(["contract renewal"]))[0]))
    async with db.tenant(org) as conn:
        # The live model's search, through the dispatcher the service role just rewrote.
        hits = await conn.fetch("SELECT chunk_id FROM public.knowledge_search($1, $2, $3, true, true, 8)",
                                org, vector, "contract renewal")  # fmt: skip
        assert len(hits) >= 1
        # And the new model's branch is there and executable by the tenant.
        assert await conn.fetch(DISPATCH, model) == []
