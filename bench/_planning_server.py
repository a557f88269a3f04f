"""An embedded PostgreSQL that loads pg_stat_statements, for measuring how often a statement is planned.

The project's embedded server preloads nothing (docs/decisions.md); pg_stat_statements needs
`shared_preload_libraries`, so `planning_server(folder)` starts a server of its own in `folder`, sets the
library and its planning counters with ALTER SYSTEM, restarts it once, and stops it on exit. With
DATABASE_URL set it yields that server as it is (the caller checks that the view answers).

This module must never be imported outside `bench/` and tests, and never touch the project's own data folder.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from state.embedded import embedded_server_url, restart_embedded_server, stop_embedded_server

__all__ = ["PGSS_SETTINGS", "planning_server", "statement_counters"]

PGSS_SETTINGS = {
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "all",
    "pg_stat_statements.track_planning": "on",
}
"""What the server runs with: nested statements (those a function runs) counted, planning included."""


@asynccontextmanager
async def planning_server(folder: Path) -> AsyncIterator[str]:
    """The admin URL of a server that tracks planning in pg_stat_statements (DATABASE_URL's when set)."""
    external = os.environ.get("DATABASE_URL")
    if external:
        yield external
        return
    url = embedded_server_url(folder, keep_running=True)
    try:
        admin = await asyncpg.connect(url)
        try:
            for name, value in PGSS_SETTINGS.items():
                await admin.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        finally:
            await admin.close()
        stop_embedded_server(folder)
        restart_embedded_server(folder)
        yield url
    finally:
        stop_embedded_server(folder)


async def statement_counters(conn: asyncpg.Connection, like: str) -> list[asyncpg.Record]:
    """pg_stat_statements' rows of this database whose text contains `like`: calls, plans and their times."""
    return await conn.fetch(
        "SELECT s.queryid, s.toplevel, s.calls, s.plans, s.total_plan_time, s.total_exec_time, "
        "left(regexp_replace(s.query, '\\s+', ' ', 'g'), 80) AS head "
        "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
        "WHERE d.datname = current_database() AND strpos(s.query, $1) > 0 ORDER BY s.calls DESC",
        like,
    )
