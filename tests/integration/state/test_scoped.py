from __future__ import annotations

import uuid

import asyncpg
import pytest

from state.db import TENANT_ROLE, Database
from state.errors import DatabaseError, UnknownTableError
from state.scoped import Embed, record_queries, scoped_db
from tests.factories import Factory


async def test_scoped_db_refuses_an_unknown_table(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    async with scoped_db(db, org) as client:
        with pytest.raises(UnknownTableError, match="intel_companies"):
            await client.select("intel_companies", ["id", "name"])
        with pytest.raises(UnknownTableError):
            await client.select("pg_authid", ["rolname"])


async def test_scoped_db_never_returns_another_organizations_row(db: Database, factory: Factory) -> None:
    a = await factory.tenant(companies=2)
    b = await factory.tenant(companies=3)
    async with scoped_db(db, a.id) as client:
        rows = await client.select("crm_companies", ["id", "organization_id"])
        # Asking for B's ids explicitly still answers nothing.
        leaked = await client.select("crm_companies", ["id"], where_in={"id": b.companies})
    assert sorted(r["id"] for r in rows) == sorted(a.companies)
    assert {r["organization_id"] for r in rows} == {a.id}
    assert leaked == []


async def test_row_level_security_refuses_a_query_that_forgot_its_filter(db: Database, factory: Factory) -> None:
    a = await factory.tenant(companies=1)
    await factory.tenant(companies=4)
    async with db.tenant(a.id) as conn:
        rows = await conn.fetch("SELECT id FROM public.crm_companies")  # no WHERE on purpose
    assert [r["id"] for r in rows] == a.companies


async def test_a_tenant_connection_is_the_tenant_role_for_one_transaction_only(db: Database) -> None:
    org = uuid.uuid4()
    async with db.tenant(org) as conn:
        inside = await conn.fetchrow("SELECT current_user AS role, current_setting('app.organization_id') AS org")
        backend = await conn.fetchval("SELECT pg_backend_pid()")
    assert (inside["role"], inside["org"]) == (TENANT_ROLE, str(org))
    async with db.connection() as conn:  # the settings were LOCAL: no connection of the pool keeps them
        after = await conn.fetchrow(
            "SELECT current_user AS role, current_setting('app.organization_id', true) AS org, pg_backend_pid() AS pid"
        )
    assert after["role"] != TENANT_ROLE and not after["org"], (after, backend)


async def test_a_tenant_connection_cannot_write(db: Database, factory: Factory) -> None:
    a = await factory.tenant(companies=1)
    async with db.tenant(a.id) as conn:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("DELETE FROM public.crm_companies")


async def test_soft_deleted_rows_are_excluded_unless_asked(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    live = await factory.company(org)
    gone = await factory.company(org)
    async with db.connection() as conn:
        await conn.execute("UPDATE crm_companies SET deleted_at = now() WHERE id = $1", gone)
    async with scoped_db(db, org) as client:
        default = await client.select("crm_companies", ["id"])
        everything = await client.select("crm_companies", ["id"], include_deleted=True)
    assert [r["id"] for r in default] == [live]
    assert sorted(r["id"] for r in everything) == sorted([live, gone])


async def test_an_embed_reaches_the_global_row_only_through_the_tenants_bridge(db: Database, factory: Factory) -> None:
    a = await factory.organization()
    b = await factory.organization()
    shared = await factory.intel_company(name="Shared Co")
    only_b = await factory.intel_company(name="B only")
    await factory.prospect(a, intel_company_id=shared)
    await factory.prospect(b, intel_company_id=only_b)
    with record_queries() as log:
        async with scoped_db(db, a) as client:
            rows = await client.select(
                "prospects",
                ["id", "intel_company_id"],
                where_in={"intel_company_id": [shared, only_b]},
                embed=Embed(name="company", via="intel_company_id", columns=["name", "domain"]),
            )
    assert [r["company"]["name"] for r in rows] == ["Shared Co"]
    assert log.tables() == ["prospects"]


async def test_an_undeclared_embed_is_refused(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    async with scoped_db(db, org) as client:
        with pytest.raises(UnknownTableError):
            await client.select("crm_people", ["id"], embed=Embed(name="x", via="company_id", columns=["name"]))


async def test_identifiers_from_outside_are_refused_before_sql(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    async with scoped_db(db, org) as client:
        with pytest.raises(ValueError, match="identifier"):
            await client.select("crm_companies", ["id; DROP TABLE users"])
        with pytest.raises(ValueError):
            await client.select("crm_companies", ["id"], order_by=["name SIDEWAYS"])


async def test_a_bad_value_is_translated_with_its_cause(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    async with scoped_db(db, org) as client:
        with pytest.raises(DatabaseError) as caught:
            await client.select("crm_companies", ["id"], where={"created_at": "not a date"})
    assert caught.value.__cause__ is not None


async def test_the_prospect_people_named_index_folds_case_and_spaces(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    prospect = await factory.prospect(org)
    await factory.prospect_person(org, prospect, full_name="  Ada   Lovelace")
    with pytest.raises(asyncpg.UniqueViolationError) as caught:
        await factory.prospect_person(org, prospect, full_name="ada lovelace")
    assert caught.value.constraint_name == "uq_prospect_people_prospect_named_person"


async def test_one_person_at_two_prospects_is_allowed_but_not_twice_at_one(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    person = await factory.intel_person()
    p1 = await factory.prospect(org)
    p2 = await factory.prospect(org)
    await factory.prospect_person(org, p1, intel_person_id=person)
    await factory.prospect_person(org, p2, intel_person_id=person)
    with pytest.raises(asyncpg.UniqueViolationError):
        await factory.prospect_person(org, p1, intel_person_id=person)


async def test_every_tenant_policy_reads_the_tenant_once_per_statement(db: Database, factory: Factory) -> None:
    policies = await db.pool.fetch(
        "SELECT schemaname || '.' || tablename AS t, qual FROM pg_policies WHERE qual LIKE '%current_organization_id%'"
    )
    assert len(policies) >= 30  # the application, knowledge and statistics tables
    # As an InitPlan, `(SELECT current_organization_id())`, never a call per filtered row.
    per_row = [
        p["t"]
        for p in policies
        if p["qual"].count("current_organization_id()")
        != p["qual"].count("SELECT current_organization_id() AS current_organization_id")
    ]
    assert per_row == []
    # And the plan shows it: one InitPlan for the tenant, no per-row call in the filter.
    a = await factory.tenant(companies=2)
    async with db.tenant(a.id) as conn:
        plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN SELECT id FROM public.crm_companies"))
        rows = await conn.fetch("SELECT id FROM public.crm_companies")
    assert "InitPlan" in plan and "current_setting" not in plan.split("InitPlan")[0], plan
    assert sorted(r["id"] for r in rows) == sorted(a.companies)
