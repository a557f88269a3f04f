"""The demo brief of these sources, and the named queries the sources use."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

from rich.console import Console

from context.sources._app_common import APP_QUERIES
from functions.demo.sources import demo_brief
from state.db import Database

SOURCES = Path(__file__).resolve().parents[3] / "context" / "sources"


def test_every_named_query_the_sources_use_exists() -> None:
    used: set[str] = set()
    for module in SOURCES.glob("*.py"):
        used.update(re.findall(r'APP_QUERIES\["([a-z_]+)"\]', module.read_text()))
    assert used, "the sources read through named queries"
    assert used <= set(APP_QUERIES), f"unknown named queries: {sorted(used - set(APP_QUERIES))}"


async def test_the_demo_prints_a_brief_with_every_section_and_its_accounting_twice(db: Database) -> None:
    out = StringIO()
    console = Console(file=out, width=200)
    await demo_brief(db, console)
    first = out.getvalue()
    await demo_brief(db, console)  # idempotent: a second run duplicates no row
    for heading in ("## Conversation", "## Application state", "## Company dossier", "## Definitions"):
        assert heading in first
    assert "## Outreach thread" in first and "## Run history" in first
    assert "failed sources: none" in first and "tokens spent" in first
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM outreach_messages") == 3
        assert await conn.fetchval("SELECT count(*) FROM agent.runs") == 2
