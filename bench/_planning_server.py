"""An embedded PostgreSQL that loads pg_stat_statements, for measuring how often a statement is planned.

The project's embedded server preloads nothing (docs/decisions.md); pg_stat_statements needs
`shared_preload_libraries`, so `planning_server(folder)` starts a server of its own in `folder` (whatever
DATABASE_URL says: that server may not preload the library), sets the library and its planning counters with
ALTER SYSTEM, restarts it once, and stops it on exit. `install_dynamic_search` writes 0103's knowledge_search
(the statement planned on every call, kept as a test fixture since 0107 replaced it) beside the live one under
another name, so a run can interleave the two.

This module must never be imported outside `bench/` and tests, and never touch the project's own data folder.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from state.embedded import embedded_server_url, restart_embedded_server, stop_embedded_server

__all__ = [
    "DYNAMIC_SEARCH_SQL",
    "PGSS_SETTINGS",
    "backend_cpu_ms",
    "install_dynamic_search",
    "planning_server",
    "statement_counters",
]

PGSS_SETTINGS = {
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "all",
    "pg_stat_statements.track_planning": "on",
}
"""What the server runs with: nested statements (those a function runs) counted, planning included."""

DYNAMIC_SEARCH_SQL = Path(__file__).resolve().parents[1] / "tests/integration/knowledge/knowledge_search_0103.sql"
"""0103's knowledge_search as it was (removed from the migration when 0107 replaced it)."""


@asynccontextmanager
async def planning_server(folder: Path) -> AsyncIterator[str]:
    """The admin URL of a server of its own in `folder` that tracks planning in pg_stat_statements."""
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


async def install_dynamic_search(conn: asyncpg.Connection, name: str = "knowledge_search_dynamic") -> None:
    """0103's knowledge_search, as it was, under `name` in schema public, executable by the tenant role."""
    text = DYNAMIC_SEARCH_SQL.read_text()
    start = text.index("CREATE FUNCTION public.knowledge_search(")
    end = text.index("$fn$;", start) + len("$fn$;")
    await conn.execute(text[start:end].replace("public.knowledge_search(", f"public.{name}(", 1))
    await conn.execute(f"GRANT EXECUTE ON FUNCTION public.{name} TO ac_tenant")


async def statement_counters(conn: asyncpg.Connection, like: str) -> list[asyncpg.Record]:
    """pg_stat_statements' rows of this database whose text contains `like`: calls, plans and their times."""
    return await conn.fetch(
        "SELECT s.queryid, s.toplevel, s.calls, s.plans, s.total_plan_time, s.total_exec_time, "
        "left(regexp_replace(s.query, '\\s+', ' ', 'g'), 80) AS head "
        "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
        "WHERE d.datname = current_database() AND strpos(s.query, $1) > 0 ORDER BY s.calls DESC",
        like,
    )


def backend_cpu_ms(pid: int) -> float:
    """User + system CPU a local server process has used so far, in ms (from /proc; 10 ms ticks)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")
