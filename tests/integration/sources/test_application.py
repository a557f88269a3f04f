"""The `application` source: items per projected field, order, labels and the intelligence bridge."""

from __future__ import annotations

from decimal import Decimal

from context.sources.application import ApplicationContextSource
from context.tokens import estimate_tokens
from state.db import Database
from tests.integration.sources.helpers import AppFactory, ref, request, spec


async def test_items_restore_request_order_across_kinds(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    company = await app.company(org, name="Zeta")
    deal = await app.deal(org, name="Alpha deal", amount=Decimal("1200.50"), currency="EUR")
    items = await ApplicationContextSource(db).retrieve(
        request(org, ref("crm.deal", deal), ref("crm.company", company)), spec("application")
    )
    assert [i.ref.kind for i in items if i.ref] == ["crm.deal"] * 3 + ["crm.company"], "request order, not kind order"
    amount = next(i for i in items if i.subject_key == f"crm.deal:{deal}:amount")
    assert amount.body == "1200.50" and amount.title == "Alpha deal amount"
    assert amount.tokens == estimate_tokens("1200.50"), "tokens measure the body alone"
    assert all(i.kind == "application" and i.source == "application" for i in items)


async def test_an_intelligence_company_resolves_through_the_tenants_prospect(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    shared = await app.intel_company(name="Globex", domain="globex.test", country="DE")
    await app.prospect(org, intel_company_id=shared)
    await app.prospect(org, intel_company_id=shared)  # two bridges, one projection
    items = await ApplicationContextSource(db).retrieve(
        request(org, ref("intelligence.company", shared)), spec("application")
    )
    assert [i.subject_key for i in items] == [
        f"intelligence.company:{shared}:name",
        f"intelligence.company:{shared}:domain",
        f"intelligence.company:{shared}:country",
    ]
    assert items[0].ref is not None and items[0].ref.label == "Globex"


async def test_an_activity_and_a_list_project_their_scalar_fields(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    person = await app.person(org)
    activity = await app.activity(org, subject="Intro call", status="done", person_id=person)
    crm_list = await app.crm_list(org, name="Q3 targets", description="Accounts to open")
    items = await ApplicationContextSource(db).retrieve(
        request(org, ref("crm.activity", activity), ref("crm.list", crm_list)), spec("application")
    )
    fields = [(i.ref.kind if i.ref else "", i.subject_key.rsplit(":", 1)[1] if i.subject_key else "") for i in items]
    assert fields == [
        ("crm.activity", "activity_type"),
        ("crm.activity", "subject"),
        ("crm.activity", "status"),
        ("crm.activity", "person_id"),
        ("crm.list", "name"),
        ("crm.list", "description"),
        ("crm.list", "entity_kind"),
    ]
