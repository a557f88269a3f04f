"""The shared resolvers of `state.resolvers`: batching, soft delete, projections and the intelligence bridge."""

from __future__ import annotations

from decimal import Decimal
from uuid import uuid4

from state.db import Database
from state.projections import PROJECTIONS, SUPPORTED_REF_KINDS
from state.resolvers import resolve_refs
from state.scoped import record_queries, scoped_db
from tests.integration.sources.helpers import AppFactory, ref


async def test_supported_kinds_are_exactly_the_eight_the_spec_names() -> None:
    assert {
        "crm.company",
        "crm.person",
        "crm.deal",
        "crm.activity",
        "crm.list",
        "prospect",
        "intelligence.company",
        "intelligence.person",
    } == SUPPORTED_REF_KINDS


async def test_intelligence_company_projection_is_the_crm_one_without_lifecycle_and_with_domain() -> None:
    crm = PROJECTIONS["crm.company"].columns
    intel = PROJECTIONS["intelligence.company"].columns
    assert "lifecycle_stage" in crm and "lifecycle_stage" not in intel
    assert "domain" in intel and "domain" not in crm
    assert set(intel) - {"domain"} == set(crm) - {"lifecycle_stage"}
    assert PROJECTIONS["prospect"].columns == (
        "review_state",
        "opportunity_score",
        "opportunity_reason",
        "recommended_action",
        "people_state",
        "people_state_reason",
    )
    assert PROJECTIONS["intelligence.person"].columns == (
        "full_name",
        "current_title",
        "current_company_text",
        "email",
        "linkedin_url",
        "country",
    )


async def test_a_kind_of_150_ids_is_read_in_two_batches_of_100(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    ids = [await app.company(org) for _ in range(150)]
    async with scoped_db(db, org) as client:
        with record_queries() as log:
            resolved = await resolve_refs(client, [ref("crm.company", i) for i in ids])
    assert len(resolved) == 150, "every live company of the tenant resolves"
    assert log.tables() == ["crm_companies", "crm_companies"], "150 ids of one kind cost exactly two queries"


async def test_invalid_uuids_and_unsupported_kinds_cost_no_query(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    async with scoped_db(db, org) as client:
        with record_queries() as log:
            resolved = await resolve_refs(client, [ref("crm.company", "not-a-uuid"), ref("agent.run", uuid4())])
    assert resolved == {}
    assert log.entries == [], "an id that is not a UUID or a kind no resolver owns must not reach the database"


async def test_projection_keeps_order_drops_nulls_and_takes_the_row_name_as_label(
    db: Database, app: AppFactory
) -> None:
    org = await app.organization()
    owner = await app.user(org)
    company = await app.company(org, name="Northwind", lifecycle_stage="customer", industry=None)
    deal = await app.deal(org, name="Pilot", amount=Decimal("48000.00"), owner_user_id=owner, company_id=company)
    async with scoped_db(db, org) as client:
        resolved = await resolve_refs(client, [ref("crm.company", company, "old"), ref("crm.deal", deal)])
    c = resolved[("crm.company", str(company))]
    assert c.ref.label == "Northwind", "a row with a display name labels its ref with it"
    assert [k for k, _ in c.fields] == ["name", "lifecycle_stage"], "non-null fields only, in projection order"
    d = resolved[("crm.deal", str(deal))]
    assert dict(d.fields)["owner_user_id"] == owner and dict(d.fields)["company_id"] == company
    assert "created_at" not in dict(d.fields), "a deal projection joins nothing and reads no audit column"


async def test_a_prospect_keeps_the_input_label(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    prospect = await app.prospect(org, review_state="qualified", opportunity_score=Decimal("81.5"))
    async with scoped_db(db, org) as client:
        resolved = await resolve_refs(client, [ref("prospect", prospect, "Contoso prospect")])
    p = resolved[("prospect", str(prospect))]
    assert p.ref.label == "Contoso prospect"
    assert dict(p.fields) == {"review_state": "qualified", "opportunity_score": Decimal("81.50")}


async def test_soft_deleted_crm_rows_do_not_resolve(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    gone = await app.person(org)
    async with db.connection() as conn:
        await conn.execute("UPDATE crm_people SET deleted_at = now() WHERE id = $1", gone)
    async with scoped_db(db, org) as client:
        assert await resolve_refs(client, [ref("crm.person", gone)]) == {}


async def test_an_intelligence_company_no_prospect_of_this_tenant_points_at_resolves_to_nothing(
    db: Database, app: AppFactory
) -> None:
    a = await app.organization()
    b = await app.organization()
    watched = await app.intel_company(name="Shared Co")
    unwatched = await app.intel_company()
    await app.prospect(b, intel_company_id=watched)  # only B watches it
    async with scoped_db(db, a) as client:
        assert (
            await resolve_refs(client, [ref("intelligence.company", watched), ref("intelligence.company", unwatched)])
            == {}
        )
    async with scoped_db(db, b) as client:
        resolved = await resolve_refs(client, [ref("intelligence.company", watched)])
    assert resolved[("intelligence.company", str(watched))].ref.label == "Shared Co"


async def test_deleting_the_shared_row_removes_the_bridge_and_the_ref_resolves_to_nothing(
    db: Database, app: AppFactory
) -> None:
    org = await app.organization()
    shared = await app.intel_company()
    await app.prospect(org, intel_company_id=shared)
    async with scoped_db(db, org) as client:
        assert len(await resolve_refs(client, [ref("intelligence.company", shared)])) == 1
    async with db.connection() as conn:
        await conn.execute("DELETE FROM intel_companies WHERE id = $1", shared)
        bridges = await conn.fetchval("SELECT count(*) FROM prospects WHERE intel_company_id = $1", shared)
    assert bridges == 0, "the bridge foreign key cascades"
    async with scoped_db(db, org) as client:
        assert await resolve_refs(client, [ref("intelligence.company", shared)]) == {}


async def test_a_person_watched_at_two_companies_yields_one_projection(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    person = await app.intel_person(full_name="Ada Lovelace", country="UK")
    p1 = await app.prospect(org)
    p2 = await app.prospect(org)
    await app.prospect_person(org, p1, intel_person_id=person, full_name="Ada Lovelace")
    await app.prospect_person(org, p2, intel_person_id=person, full_name="Ada Lovelace")
    async with scoped_db(db, org) as client:
        resolved = await resolve_refs(client, [ref("intelligence.person", person)])
    assert list(resolved) == [("intelligence.person", str(person))]
    assert dict(resolved[("intelligence.person", str(person))].fields) == {"full_name": "Ada Lovelace", "country": "UK"}


async def test_a_named_person_with_no_profile_never_resolves(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    prospect = await app.prospect(org)
    named = await app.prospect_person(org, prospect, full_name="Only A Name")
    async with scoped_db(db, org) as client:
        resolved = await resolve_refs(client, [ref("intelligence.person", named), ref("intelligence.person", prospect)])
    assert resolved == {}, "a prospect_people row with no intel_person_id bridges to nothing"
