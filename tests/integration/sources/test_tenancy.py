"""Tenancy: every source returns nothing of organization B for a subject of organization A.

Both tenants hold look-alike rows (same names, shapes and shared Intelligence rows); the request of A even
names B's ids, B's conversation and B's user, so only the organization filter (and RLS behind it) stands
between A and B's rows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from context.models import ContextItem, ContextRequest, ContextSubject
from context.sources.application import ApplicationContextSource
from context.sources.conversation import ConversationContextSource
from context.sources.definition_summary import DefinitionSummaryContextSource
from context.sources.dossier import DossierContextSource
from context.sources.outreach import OutreachContextSource
from context.sources.outreach_thread import OutreachThreadContextSource
from context.sources.run_history import RunHistoryContextSource
from state.db import Database
from tests.integration.sources.helpers import AppFactory, ref, spec


async def _tenant(app: AppFactory, marker: str, shared_company: UUID, shared_person: UUID) -> dict[str, UUID]:
    org = await app.organization(f"{marker} org")
    user = await app.user(org, display_name=f"{marker} user")
    company = await app.company(org, name=f"{marker} Northwind", lifecycle_stage="customer")
    person = await app.person(org, full_name=f"{marker} Ada")
    prospect = await app.prospect(org, intel_company_id=shared_company, opportunity_reason=f"{marker} reason")
    await app.prospect_person(org, prospect, intel_person_id=shared_person, full_name=f"{marker} Grace")
    conversation = await app.conversation(org, summary=f"{marker} summary")
    await app.message(org, conversation, f"{marker} hello")
    await app.company_profile(org, company_name=f"{marker} Inc")
    await app.offer(org, f"{marker} offer")
    await app.document(org, f"{marker} doc")
    await app.definition(org, name=f"{marker} agent", safe_summary=f"{marker} does things")
    sequence = await app.sequence(org, f"{marker} sequence")
    await app.enrollment(org, sequence, person, next_action=f"{marker} follow up")
    await app.outreach_message(org, person, f"{marker} pitch", direction="inbound")
    await app.run_result(
        org,
        {"summary": f"{marker} run", "refs": [{"kind": "crm.company", "id": str(company)}]},
        user_id=user,
        created_at=datetime.now(UTC) - timedelta(hours=1),
    )
    return {
        "org": org,
        "user": user,
        "company": company,
        "person": person,
        "prospect": prospect,
        "conversation": conversation,
    }


def _leaks(items: list[ContextItem], marker: str, b: dict[str, UUID]) -> list[str]:
    ids = {str(v) for v in b.values()}
    found = []
    for item in items:
        text = f"{item.title} {item.body}"
        refs = [r.id for r in [item.ref, *item.body_refs] if r is not None]
        if marker in text or ids.intersection(refs) or any(i in text for i in ids):
            found.append(f"{item.source}: {item.title}: {item.body}")
    return found


async def test_every_source_returns_nothing_of_organization_b_for_a_subject_of_organization_a(
    db: Database, app: AppFactory
) -> None:
    shared_company = await app.intel_company(name="Shared Globex")
    shared_person = await app.intel_person(full_name="Shared Person")
    b = await _tenant(app, "BETA", shared_company, shared_person)
    a_org = await app.organization("ALPHA org")
    await app.company(a_org, name="ALPHA Northwind")
    # A names B's rows, B's conversation and B's user: the organization filter alone must refuse them.
    req = ContextRequest(
        subject=ContextSubject(organization_id=a_org, user_id=b["user"]),
        query="BETA Northwind",
        entities=[
            ref("crm.company", b["company"]),
            ref("crm.person", b["person"]),
            ref("prospect", b["prospect"]),
            ref("intelligence.company", shared_company),
            ref("intelligence.person", shared_person),
        ],
        conversation_id=b["conversation"],
    )
    sources = [
        ApplicationContextSource(db),
        ConversationContextSource(db),
        DossierContextSource(db),
        DefinitionSummaryContextSource(db),
        RunHistoryContextSource(db),
        OutreachContextSource(db),
        OutreachThreadContextSource(db),
    ]
    try:
        for source in sources:
            items = await source.retrieve(
                req, spec(source.name, include_user=True) if source.name == "dossier" else spec(source.name)
            )
            assert _leaks(items, "BETA", b) == [], f"{source.name} leaked organization B's rows to A"
            if source.name != "dossier":
                assert items == [], f"{source.name} must answer nothing for rows A does not hold"
    finally:
        await sources[2].aclose()  # type: ignore[attr-defined]

    # The same request for B answers B's rows, so the emptiness above is the filter, not a broken fixture.
    b_req = ContextRequest(
        subject=ContextSubject(organization_id=b["org"], user_id=b["user"]),
        query="",
        entities=req.entities,
        conversation_id=b["conversation"],
    )
    for source in sources:
        if source.name == "dossier":
            continue
        assert await source.retrieve(b_req, spec(source.name)), f"{source.name} should answer B's own rows"
