"""`scoped_db`'s explicit organization filter holds on its own (issue 14).

Row-level security hides the removal of the filter on a tenant connection, but the service role bypasses
row-level security, and there the explicit filter is the only guard. These tests run `OrgScopedClient`
on a service-role connection, check first that the connection does see every tenant, and then that the
client answers only its own organization's rows.
"""

from __future__ import annotations

from uuid import UUID

from state.db import Database
from state.scoped import ORG_SCOPED_TABLES, Embed, OrgScopedClient
from tests.factories import Factory


async def _bypasses_row_level_security(db: Database, table: str, orgs: set[UUID]) -> None:
    async with db.connection() as conn:
        seen = {r["organization_id"] for r in await conn.fetch(f"SELECT organization_id FROM public.{table}")}
    assert orgs <= seen, "the precondition: this connection reads every tenant, so RLS guards nothing here"


async def test_the_explicit_filter_alone_keeps_another_tenants_rows_out_on_the_service_role(
    db: Database, factory: Factory
) -> None:
    a = await factory.tenant(companies=2, people=1)
    b = await factory.tenant(companies=3, people=2)
    await _bypasses_row_level_security(db, "crm_companies", {a.id, b.id})
    async with db.connection() as conn:
        client = OrgScopedClient(conn, a.id)
        companies = await client.select("crm_companies", ["id", "organization_id"])
        asked_for_b = await client.select("crm_companies", ["id"], where_in={"id": b.companies})
        people = await client.select("crm_people", ["id", "organization_id"], order_by=["id"], limit=50)
    assert sorted(r["id"] for r in companies) == sorted(a.companies)
    assert {r["organization_id"] for r in companies} == {a.id}
    assert asked_for_b == [], "naming another tenant's ids explicitly still answers nothing"
    assert [r["id"] for r in people] == a.people


async def test_the_explicit_filter_holds_for_a_bridge_embed_on_the_service_role(db: Database, factory: Factory) -> None:
    a = await factory.organization()
    b = await factory.organization()
    shared = await factory.intel_company(name="Shared Co")
    await factory.prospect(a, intel_company_id=shared)
    await factory.prospect(b, intel_company_id=shared)
    await _bypasses_row_level_security(db, "prospects", {a, b})
    async with db.connection() as conn:
        rows = await OrgScopedClient(conn, a).select(
            "prospects",
            ["id", "organization_id"],
            where_in={"intel_company_id": [shared]},
            embed=Embed(name="company", via="intel_company_id", columns=["name"]),
        )
    assert [(r["organization_id"], r["company"]["name"]) for r in rows] == [(a, "Shared Co")]


async def test_every_scoped_table_is_filtered_on_the_service_role(db: Database, factory: Factory) -> None:
    a = await factory.tenant(companies=1)
    b = await factory.tenant(companies=1)
    async with db.connection() as conn:
        client = OrgScopedClient(conn, a.id)
        for table in ORG_SCOPED_TABLES:
            rows = await client.select(table, ["organization_id"], include_deleted=True)
            assert {r["organization_id"] for r in rows} <= {a.id}, f"{table} answered another tenant's row"
        users = await client.select("users", ["organization_id"])
    assert {r["organization_id"] for r in users} == {a.id} and b.id != a.id
