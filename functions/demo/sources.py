"""The demo step that builds and prints a brief for the demo tenant from the application-state sources.

`demo_brief(db, console)` has `state.demo_tenant` write the demo tenant and a few extra demo rows (the
Company dossier, an Intelligence company the tenant watches through a prospect, two earlier runs with result
refs, an outreach sequence, enrollment and thread) idempotently under fixed ids, then builds a brief with the
seven sources over application state under `DEMO_POLICY` (and a second under `OUTREACH_PLANNER`, the one
policy holding the outreach classes) and prints each text with its token accounting (tokens,
per_source_tokens, dropped, failed_sources).

It holds no SQL: every row it needs is written by `state.demo_tenant`.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from context.builder import DefaultContextBuilder
from context.models import (
    ContextBrief,
    ContextPolicy,
    ContextRequest,
    ContextSourceSpec,
    ContextSubject,
    ResourceRef,
)
from context.packer import ContextPacker
from context.policies import OUTREACH_PLANNER
from context.registry import ContextSourceRegistry
from context.sources.dossier import DossierContextSource
from context.sources.standard import application_sources
from state.db import Database
from state.demo_tenant import DEMO, seed_demo_sources, seed_demo_tenant

__all__ = ["DEMO_POLICY", "demo_brief", "demo_request"]

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
            ResourceRef(kind="intelligence.company", id=str(d.intel_company_id)),
            ResourceRef(kind="prospect", id=str(d.prospect_id), label="Contoso prospect"),
        ],
        conversation_id=d.conversation_id,
    )


async def demo_brief(db: Database, console: Console) -> None:
    """Build and print a brief for the demo tenant from the application-state sources, with its accounting."""
    await seed_demo_tenant(db)
    await seed_demo_sources(db)
    dossier = DossierContextSource(db)
    sources = application_sources(db, dossier=dossier)
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
