"""`ac-context demo`: the whole story on the embedded default, told step by step in under a minute.

1. the database: migrate (embedded PostgreSQL unless `DATABASE_URL` is set);
2. the demo tenant: seed its organization, user, CRM rows, conversation and agent;
3. knowledge: ingest the demo documents with a progress bar and search them;
4. memory: remember, supersede, refuse and forget through the memory tools;
5. application state: briefs from the sources over application rows;
6. the final brief: the front door policy through the process registry (every source but the two outreach
   classes, which only the Outreach planner policy holds: chapter 5 shows them), with its accounting;
then what to run next (`functions.demo.next_steps`): `make serve`, the console's address, how to sign in.

Every chapter is idempotent. This module must never write outside the demo tenant (and the platform
documents of the knowledge chapter), and it tells the story through the same core the service runs.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from rich.console import Console
from rich.table import Table

from context.builder import DefaultContextBuilder
from context.models import ContextBrief, ContextRequest, ContextSubject
from context.packer import ContextPacker
from context.policies import FRONT_DOOR
from context.sources import default_registry
from functions.demo.knowledge import demo_knowledge
from functions.demo.memory import demo_memory
from functions.demo.next_steps import next_steps
from functions.demo.sources import demo_brief, demo_request
from state.db import Database, resolve_database_url
from state.demo_tenant import DEMO, seed_demo_tenant
from state.migrate import apply_migrations
from state.settings import get_settings

__all__ = ["FINAL_POLICY", "run_demo"]

FINAL_POLICY = FRONT_DOOR
"""The demo's final policy: the front door's; a policy adding the outreach classes fails the publish check."""


async def _chapter(console: Console, title: str, step: Callable[[], Awaitable[None]]) -> None:
    console.rule(title)
    started = time.perf_counter()
    await step()
    console.print(f"[dim]{title}: {time.perf_counter() - started:.1f}s[/]")


async def final_brief(db: Database, console: Console) -> ContextBrief:
    """Build the demo turn's brief with every registered source, as the agent's first segment would."""
    registry = default_registry(db)
    registry.validate(FINAL_POLICY)
    turn = demo_request()
    request = ContextRequest(
        subject=ContextSubject.for_run(
            organization_id=DEMO.organization_id, definition_id=DEMO.definition_id, user_id=DEMO.user_id
        ),
        query=turn.query,
        entities=turn.entities,
        conversation_id=turn.conversation_id,
    )
    builder = DefaultContextBuilder(registry, ContextPacker(), source_timeout_s=get_settings().source_timeout_s)
    try:
        brief = await builder.build(request, FINAL_POLICY)
    finally:
        for source in registry:
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()
    console.print(brief.text, markup=False, highlight=False)
    table = Table("source", "budget", "tokens spent", "dropped")
    for spec in FINAL_POLICY.sources:
        spent, dropped = brief.per_source_tokens.get(spec.name, 0), brief.dropped.get(spec.name, 0)
        table.add_row(spec.name, str(spec.token_budget), str(spent), str(dropped))
    console.print(table)
    console.print(
        f"brief tokens {brief.tokens} of {FINAL_POLICY.total_token_budget}; citable rows {len(brief.items)}; "
        f"failed sources: {', '.join(brief.failed_sources) or 'none'}"
    )
    return brief


async def run_demo(console: Console) -> None:
    """Migrate, seed the demo tenant, ingest, remember, and print the briefs with their accounting."""
    settings = get_settings()
    started = time.perf_counter()
    url = resolve_database_url(settings)
    where = (settings.database_url and "DATABASE_URL") or f"embedded PostgreSQL under {settings.data_dir}/pg"
    console.rule("1. Database")
    console.print(f"using {where}")
    applied = await apply_migrations(url)
    console.print(f"migrations applied this run: {len(applied)} ({', '.join(applied) or 'none pending'})")
    db = await Database.open(settings, url=url, migrate=False)
    try:
        console.rule("2. Demo tenant")
        counts = await seed_demo_tenant(db)
        table = Table("rows", "count")
        for name, count in counts.items():
            table.add_row(name, str(count))
        console.print(f"organization {DEMO.organization_id}")
        console.print(table)
        await _chapter(console, "3. Knowledge: ingest and search", lambda: demo_knowledge(db, console))
        await _chapter(console, "4. Memory: the tools and the revision chain", lambda: demo_memory(db, console))
        await _chapter(console, "5. Application state: briefs", lambda: demo_brief(db, console))

        async def last() -> None:
            await final_brief(db, console)

        await _chapter(console, "6. The final brief: the front door policy", last)
    finally:
        await db.close()
    console.rule(f"done in {time.perf_counter() - started:.1f}s")
    for line in next_steps():
        console.print(line, markup=False, highlight=False, soft_wrap=True)
