"""`ac-context demo`: the whole story on the embedded default, told step by step."""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from functions.demo_seed import DEMO, seed_demo_tenant
from state.db import Database, resolve_database_url
from state.migrate import apply_migrations
from state.settings import get_settings

__all__ = ["run_demo"]


async def run_demo(console: Console) -> None:
    """Migrate, seed the demo tenant and print what happened."""
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
    finally:
        await db.close()
    console.rule(f"done in {time.perf_counter() - started:.1f}s")
