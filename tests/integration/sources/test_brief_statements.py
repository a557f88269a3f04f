"""What one FRONT_DOOR build sends to the database (issues 24 and 45): its messages are counted, never timed.

Every source of the policy answers (the demo tenant with a conversation, CRM rows, a dossier, a definition,
earlier runs, a preference and a memory about a company, and a knowledge document), so each of them sends
what it sends in use. A statement count is deterministic; the timings live in bench/bench_brief_cost.py.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from context.builder import DefaultContextBuilder
from context.packer import ContextPacker
from context.policies import FRONT_DOOR
from context.sources import default_registry
from functions.demo.sources import demo_request
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.demo_tenant import DEMO, seed_demo_sources, seed_demo_tenant
from state.settings import load_settings
from tests.integration.knowledge.helpers import Kit
from tests.integration.memory.helpers import raw_memory

MAX_MESSAGES_PER_BUILD = 10
"""Issue 45's goal for a FRONT_DOOR build, typical and worst case (issue 24's was 20: 16 here, 18 in the worst
case, before the build's reads shared one connection per session and the ref kinds one statement)."""

POOL = 10


@pytest.fixture
async def full_pool(db_url: str) -> AsyncIterator[Database]:
    """A pool whose every connection is open from the start, so a query logger can sit on each."""
    database = await Database.open(load_settings(pool_min_size=POOL, pool_max_size=POOL), url=db_url, migrate=False)
    try:
        yield database
    finally:
        await database.close()


async def _world(db: Database, tmp_path: Path) -> Kit:
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    await seed_demo_tenant(db)
    await seed_demo_sources(db)
    await kit.ingest(DEMO.organization_id, "The Contoso deal is in the proposal stage; our contact is Grace Hopper.")
    await kit.ingest(None, "A deal stage names where a deal stands in the pipeline.")
    await raw_memory(
        db,
        org=DEMO.organization_id,
        definition=DEMO.definition_id,
        scope="user",
        user=DEMO.user_id,
        attribute="preference.tone",
        text="Keep answers short.",
    )
    await raw_memory(
        db,
        org=DEMO.organization_id,
        definition=DEMO.definition_id,
        refs=[{"kind": "crm.company", "id": str(DEMO.company_ids[1])}],
        attribute="observation.budget",
        text="Contoso's budget is approved for Q3.",
    )
    return kit


_INTROSPECTION = ("SELECT current_setting('jit')", "SELECT set_config('jit'", "WITH RECURSIVE typeinfo_tree")
"""asyncpg's type introspection: once per connection and type, whichever build first meets it there."""


async def _messages_of_one_build(db: Database, builder: DefaultContextBuilder) -> tuple[list[str], Any]:
    sent: list[str] = []

    def log(record: Any) -> None:
        query = " ".join(record.query.split())
        if not query.startswith(_INTROSPECTION):
            sent.append(query)

    connections = [holder._con for holder in db.pool._holders if holder._con is not None]
    assert len(connections) == POOL
    for conn in connections:
        conn.add_query_logger(log)
    try:
        brief = await builder.build(demo_request(), FRONT_DOOR)
    finally:
        for conn in connections:
            conn.remove_query_logger(log)
    return sent, brief


def _switches(messages: list[str]) -> list[str]:
    """The messages that switch a borrowed connection to its tenant session."""
    return [q for q in messages if q.startswith(("RESET ALL; SET ROLE", "RESET ROLE; RESET ALL"))]


async def _hold_every_connection(db: Database, organization_id: uuid.UUID) -> None:
    """A tenant scope of another organization on every pooled connection at once: the worst case for a build."""

    async def hold() -> None:
        async with db.tenant(organization_id) as conn:
            await conn.fetchval("SELECT 1")
            await asyncio.sleep(0.05)

    await asyncio.gather(*(hold() for _ in range(POOL)))


async def test_a_warm_front_door_build_sends_at_most_ten_messages_even_when_every_connection_held_another_tenant(
    full_pool: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("knowledge.search.LIVE_MODEL_TTL_S", 3600.0)  # a slow machine still counts warm builds
    kit = await _world(full_pool, tmp_path)
    builder = DefaultContextBuilder(default_registry(full_pool, embedders=kit.lookup), ContextPacker())
    cold, first = await _messages_of_one_build(full_pool, builder)
    for _ in range(3):
        await builder.build(demo_request(), FRONT_DOOR)
    warm, brief = await _messages_of_one_build(full_pool, builder)
    # Every source of the policy answered, so every one of them is counted.
    assert set(brief.per_source_tokens) == {s.name for s in FRONT_DOOR.sources}, brief.per_source_tokens
    assert brief.failed_sources == [] and first.failed_sources == []
    assert len(warm) <= MAX_MESSAGES_PER_BUILD, "\n".join(warm)
    # No transaction set-up and no pool reset: a borrow is switched to its session in one message or none.
    setup = [q for q in warm if q.startswith(("BEGIN", "COMMIT", "ROLLBACK", "SET LOCAL", "SELECT set_config"))]
    resets = [q for q in warm if "pg_advisory_unlock_all" in q]
    assert setup == [] and resets == [], "\n".join(warm)
    # The build's reads share one connection per session (state.db.shared_sessions): at most two switches.
    assert len(_switches(warm)) <= 2, "\n".join(warm)
    # The cold build also reads the live model and the dossier, and nothing else more. How many of its borrows
    # land on a connection already switched to this organization depends on the order the reads finish in (a
    # loaded machine reorders them), so switches are bounded per borrow and the statements counted apart.
    assert len(_switches(cold)) <= 8 + 2, "\n".join(cold)  # the eight sources, the live model, the dossier
    cold_reads = len(cold) - len(_switches(cold))
    assert cold_reads <= len(warm) - len(_switches(warm)) + 8, "\n".join(cold)
    # The worst case: every connection last held another organization, so every borrow switches once.
    await _hold_every_connection(full_pool, uuid.uuid4())
    worst, _ = await _messages_of_one_build(full_pool, builder)
    assert len(worst) <= MAX_MESSAGES_PER_BUILD, "\n".join(worst)
    # Every connection held another organization: the tenant's and the service role's session, one switch each.
    assert len(_switches(worst)) == 2, "\n".join(worst)
    # Every ref kind of the application source is one statement (state.resolvers, select_each).
    crm_reads = [q for q in worst if 'FROM public."crm_' in q]
    assert len(crm_reads) == 2, "\n".join(crm_reads)  # the application source's, and the memory guard's
