"""The demo step that builds and prints a brief for the demo tenant from the application-state sources.

`demo_brief(db, console)` writes a few extra demo rows (the Company dossier, an Intelligence company the
tenant watches through a prospect, two earlier runs with result refs, an outreach sequence, enrollment and
thread) idempotently under fixed ids, then builds a brief with the seven sources over application state
under `DEMO_POLICY` (and a second under `OUTREACH_PLANNER`, the one policy holding the outreach classes) and
prints each text with its token accounting (tokens, per_source_tokens, dropped, failed_sources).

It must never write outside the demo tenant and never edit the rows `functions.demo.seed` owns.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from rich.console import Console
from rich.table import Table

from context.builder import DefaultContextBuilder
from context.models import (
    ContextBrief,
    ContextPolicy,
    ContextRequest,
    ContextSource,
    ContextSourceSpec,
    ContextSubject,
    ResourceRef,
)
from context.packer import ContextPacker
from context.policies import OUTREACH_PLANNER
from context.registry import ContextSourceRegistry
from context.sources.application import ApplicationContextSource
from context.sources.conversation import ConversationContextSource
from context.sources.definition_summary import DefinitionSummaryContextSource
from context.sources.dossier import DossierContextSource
from context.sources.outreach import OutreachContextSource
from context.sources.outreach_thread import OutreachThreadContextSource
from context.sources.run_history import RunHistoryContextSource
from functions.demo.seed import DEMO, seed_demo_tenant
from state.db import Database

__all__ = ["DEMO_POLICY", "demo_brief", "demo_request", "seed_demo_sources"]

DEMO_POLICY = ContextPolicy(
    sources=[
        ContextSourceSpec(name="conversation", token_budget=600, limit=20),
        ContextSourceSpec(name="application", token_budget=600, limit=40),
        ContextSourceSpec(name="dossier", token_budget=300, limit=3, options={"include_user": True}),
        ContextSourceSpec(name="definition_summary", token_budget=200, limit=10),
        ContextSourceSpec(name="run_history", token_budget=300, limit=5, options={"lookback_hours": 168}),
    ],
    total_token_budget=2000,
)
"""The demo turn policy: the application-state sources a Front Door turn reads, with small budgets.

The outreach classes are not in it: only the Outreach planner policy holds them, so the demo prints a
second brief under `OUTREACH_PLANNER`, narrowed to the sources this demo registers.
"""


def _id(suffix: str) -> UUID:
    return UUID(f"00000000-0000-4000-8000-0000000a{suffix}")


_INTEL_COMPANY = _id("0001")
_PROSPECT = _id("0002")
_SEQUENCE = _id("0003")
_ENROLLMENT = _id("0004")
_MESSAGES = (_id("0005"), _id("0006"), _id("0007"))
_RUNS = (_id("0008"), _id("0009"))
_SERVICE, _ICP, _OFFER, _DOC = _id("000a"), _id("000b"), _id("000c"), _id("000d")

_INTEL_SQL = (
    "INSERT INTO intel_companies (id, name, domain, industry, country) "
    "VALUES ($1, 'Contoso Robotics GmbH', 'contoso-robotics.example', 'Robotics', 'DE') "
    "ON CONFLICT (id) DO NOTHING"
)
"""The shared Intelligence row the demo prospect points at (global plane: no organization)."""

_SQL_ROWS: tuple[tuple[str, tuple[object, ...]], ...] = (
    (
        "INSERT INTO org_company_profiles (organization_id, company_name, website, industry, headquarters) "
        "VALUES ($1, 'Acme Demo', 'https://acme.example', 'B2B software', 'Berlin') "
        "ON CONFLICT (organization_id) DO NOTHING",
        (),
    ),
    (
        "INSERT INTO org_services (id, organization_id, name, description) "
        "VALUES ($2, $1, 'Warehouse analytics', 'Dashboards for pick rates') ON CONFLICT (id) DO NOTHING",
        (_SERVICE,),
    ),
    (
        "INSERT INTO org_ideal_customer_profiles (id, organization_id, name, criteria) "
        "VALUES ($2, $1, 'Mid-market logistics', '200-2000 staff, own warehouses') ON CONFLICT (id) DO NOTHING",
        (_ICP,),
    ),
    (
        "INSERT INTO org_offers (id, organization_id, name, price_text) "
        "VALUES ($2, $1, 'Pilot', 'EUR 48k for 3 months') ON CONFLICT (id) DO NOTHING",
        (_OFFER,),
    ),
    (
        "INSERT INTO org_documents (id, organization_id, title, summary) "
        "VALUES ($2, $1, 'Pilot playbook', 'How a three-month pilot runs') ON CONFLICT (id) DO NOTHING",
        (_DOC,),
    ),
    (
        "INSERT INTO prospects (id, organization_id, prospect_kind, intel_company_id, review_state, "
        "opportunity_score, recommended_action) VALUES ($2, $1, 'company', $3, 'qualified', 82, 'book a demo') "
        "ON CONFLICT (id) DO NOTHING",
        (_PROSPECT, _INTEL_COMPANY),
    ),
    (
        "INSERT INTO outreach_sequences (id, organization_id, name, step_count) "
        "VALUES ($2, $1, 'Pilot opener', 4) ON CONFLICT (id) DO NOTHING",
        (_SEQUENCE,),
    ),
    (
        "INSERT INTO outreach_enrollments (id, organization_id, sequence_id, person_id, state, current_step, "
        "next_action) VALUES ($2, $1, $3, $4, 'replied', 2, 'answer the pricing question') "
        "ON CONFLICT (id) DO NOTHING",
        (_ENROLLMENT, _SEQUENCE, DEMO.person_ids[1]),
    ),
)


async def seed_demo_sources(db: Database) -> None:
    """Write the extra demo rows of these sources, idempotently under fixed ids."""
    d = DEMO
    now = datetime.now(UTC)
    thread = (
        ("outbound", "Grace, a pilot for Contoso's warehouses?", now - timedelta(days=3)),
        ("inbound", "Interesting. What would the pilot cost?", now - timedelta(days=2)),
        ("outbound", "Sending the pilot playbook now.", now - timedelta(days=1)),
    )
    runs = (
        (
            {
                "summary": "Researched Contoso's warehouse footprint",
                "refs": [{"kind": "crm.company", "id": str(d.company_ids[1])}],
            },
            "succeeded",
        ),
        ({"summary": "Drafted the pilot proposal", "refs": [{"kind": "crm.deal", "id": str(d.deal_id)}]}, "waiting"),
    )
    async with db.connection() as conn, conn.transaction():
        await conn.execute(_INTEL_SQL, _INTEL_COMPANY)
        for sql, args in _SQL_ROWS:
            await conn.execute(sql, d.organization_id, *args)
        for message_id, (direction, body, sent_at) in zip(_MESSAGES, thread, strict=True):
            await conn.execute(
                "INSERT INTO outreach_messages (id, organization_id, enrollment_id, person_id, direction, body, "
                "sent_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
                message_id,
                d.organization_id,
                _ENROLLMENT,
                d.person_ids[1],
                direction,
                body,
                sent_at,
            )
        for index, (run_id, (result, status)) in enumerate(zip(_RUNS, runs, strict=True)):
            # Refresh the time so the runs stay inside the demo lookback however old the database is.
            await conn.execute(
                "INSERT INTO agent.runs (id, organization_id, user_id, definition_id, status, result, "
                "waiting_reason, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
                "ON CONFLICT (id) DO UPDATE SET created_at = EXCLUDED.created_at",
                run_id,
                d.organization_id,
                d.user_id,
                d.definition_id,
                status,
                result,
                "approval of the proposal" if status == "waiting" else None,
                now - timedelta(hours=2 + index),
            )


def demo_request() -> ContextRequest:
    """The demo turn: Dana asks about the Contoso deal, with its company, contact, deal and prospect in scope."""
    d = DEMO
    return ContextRequest(
        subject=ContextSubject.of_actor(d.organization_id, d.user_id),
        query="What stage is the Contoso deal in, and who is our contact?",
        entities=[
            ResourceRef(kind="crm.company", id=str(d.company_ids[1]), label="Contoso"),
            ResourceRef(kind="crm.person", id=str(d.person_ids[1])),
            ResourceRef(kind="crm.deal", id=str(d.deal_id)),
            ResourceRef(kind="intelligence.company", id=str(_INTEL_COMPANY)),
            ResourceRef(kind="prospect", id=str(_PROSPECT), label="Contoso prospect"),
        ],
        conversation_id=d.conversation_id,
    )


async def demo_brief(db: Database, console: Console) -> None:
    """Build and print a brief for the demo tenant from the application-state sources, with its accounting."""
    await seed_demo_tenant(db)
    await seed_demo_sources(db)
    dossier = DossierContextSource(db)
    sources: list[ContextSource] = [
        ConversationContextSource(db),
        OutreachThreadContextSource(db),
        OutreachContextSource(db),
        ApplicationContextSource(db),
        dossier,
        DefinitionSummaryContextSource(db),
        RunHistoryContextSource(db),
    ]
    registry = ContextSourceRegistry(sources)
    registry.validate(DEMO_POLICY)
    # The planner's policy is the one that may hold the outreach classes, so it is the one published; the
    # demo builds it narrowed to the sources it registers (a narrowed copy is another policy, never published).
    ContextSourceRegistry.for_publishing().validate(OUTREACH_PLANNER)
    outreach_policy = OUTREACH_PLANNER.model_copy(
        update={"sources": [s for s in OUTREACH_PLANNER.sources if s.name in registry]}
    )
    builder = DefaultContextBuilder(registry, ContextPacker())
    try:
        for title, policy in (("demo turn", DEMO_POLICY), ("outreach planner", outreach_policy)):
            brief = await builder.build(demo_request(), policy)
            console.rule(f"brief: {title}")
            _print_brief(console, brief, policy)
    finally:
        await dossier.aclose()


def _print_brief(console: Console, brief: ContextBrief, policy: ContextPolicy) -> None:
    console.print(brief.text, markup=False, highlight=False)
    table = Table("source", "budget", "tokens spent", "dropped")
    for spec in policy.sources:
        table.add_row(
            spec.name,
            str(spec.token_budget),
            str(brief.per_source_tokens.get(spec.name, 0)),
            str(brief.dropped.get(spec.name, 0)),
        )
    console.print(table)
    console.print(
        f"brief tokens {brief.tokens} of {policy.total_token_budget}; "
        f"citable rows {len(brief.items)}; failed sources: {', '.join(brief.failed_sources) or 'none'}"
    )
