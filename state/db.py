"""The database boundary: one asyncpg pool with pgvector's codecs, and tenant-scoped connections.

`Database.open(settings)` connects to `DATABASE_URL` or starts the embedded default, applies the
migrations, and opens the pool. `Database.tenant(organization_id)` hands out a connection inside a
transaction that runs as the `ac_tenant` role with `app.organization_id` set, so row-level security
checks the tenancy a second time behind every explicit filter. Nothing outside `state` opens a pool.

What a tenant scope sends (issue 24): one message opens it (`BEGIN; SET LOCAL ROLE ...; SET LOCAL
app.organization_id ...`), the reads follow, and one message closes it: `ROLLBACK` and the pool's whole reset
query (advisory locks, cursors, LISTEN, RESET ALL) together. ROLLBACK undoes every setting made inside the
transaction, local or not, and the tenant role can write nothing (a test holds both), so nothing of the scope
reaches the next borrower, and the pool's release, told the session is clean, sends nothing more.
`Database.fetch` / `fetchval` run one statement on the service role and release the connection without the
reset query: the connection never left this module, and one SELECT changes no session state. Every other
connection (`Database.connection()`) gets asyncpg's full reset on release, as before.

A database that cannot be reached, at open or when the pool makes a new connection, is one
`DatabaseUnavailableError` naming `host:port` (`state._connect`). A pool on the embedded default knows
its data folder, so a service whose embedded server was stopped under it can start it again
(`restart_embedded`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias
from uuid import UUID

import asyncpg
from pgvector.asyncpg import register_vector

from state._connect import create_pool
from state.embedded import embedded_server_url, restart_embedded_server
from state.errors import connect_failure_reason, translate_connect_error
from state.settings import Settings

__all__ = ["Connection", "Database", "PooledConnection", "init_connection", "resolve_database_url"]

TENANT_ROLE = "ac_tenant"

_TENANT_BEGIN = f"BEGIN; SET LOCAL ROLE {TENANT_ROLE}; SET LOCAL app.organization_id = '{{organization}}'"
"""The one message that opens a tenant scope (the organization as canonical UUID text: hex digits and dashes)."""

Connection: TypeAlias = "asyncpg.Connection[asyncpg.Record] | asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"
"""A connection as the pool hands it out."""


async def init_connection(conn: asyncpg.Connection) -> None:
    """Register the codecs every connection needs: jsonb as Python values, and pgvector's vector."""
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    has_vector = await conn.fetchval("SELECT 1 FROM pg_type WHERE typname = 'vector'")
    if has_vector:
        await register_vector(conn)


class PooledConnection(asyncpg.Connection):
    """A pool connection whose next release may skip the reset query, when its session is known clean."""

    __slots__ = ("_session_clean",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._session_clean = False

    def mark_session_clean(self) -> None:
        """Say that nothing was changed in this session since the last reset: the next release sends nothing."""
        self._session_clean = True

    def get_reset_query(self) -> str:
        """The reset query of asyncpg, or nothing once after `mark_session_clean` (its rollback still runs)."""
        if self._session_clean:
            self._session_clean = False
            return ""
        query: str = super().get_reset_query()
        return query


def _mark_clean(conn: Connection) -> None:
    """Mark a pooled connection's session clean (a connection of another class is reset as usual)."""
    mark = getattr(conn, "mark_session_clean", None)
    if mark is not None:
        mark()


class _OneLinePoolWarnings(logging.Filter):
    """asyncpg's pool logs a traceback each time it fails to reconnect while the database is down: one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            why = connect_failure_reason(record.exc_info[1])
            record.msg, record.args = f"{record.getMessage()} ({why})", None
            record.exc_info, record.exc_text = None, None
        return True


_POOL_LOG_FILTER = _OneLinePoolWarnings()


def resolve_database_url(settings: Settings) -> str:
    """`DATABASE_URL` when set, else the embedded server under the data folder (left up for the next command)."""
    if settings.database_url:
        return settings.database_url
    return embedded_server_url(settings.data_dir, idle_timeout_s=settings.embedded_idle_minutes * 60)


@dataclass
class Database:
    """An open pool on one database."""

    pool: asyncpg.Pool
    url: str
    embedded_dir: Path | None = None
    """The data folder of the embedded server this pool is on (None: `DATABASE_URL` or a given URL)."""
    idle_timeout_s: float = 0.0
    """The embedded server's idle timeout, kept when it is started again."""

    @classmethod
    async def open(cls, settings: Settings, *, url: str | None = None, migrate: bool = True) -> Database:
        """Connect (starting the embedded server if needed), migrate, and open the pool."""
        from state.migrate import apply_migrations

        logging.getLogger("asyncpg.pool").addFilter(_POOL_LOG_FILTER)  # once: a logger keeps one of each filter
        embedded = url is None and settings.database_url is None
        url = url or resolve_database_url(settings)
        if migrate:
            await apply_migrations(url)
        pool = await create_pool(
            url,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            init=init_connection,
            connection_class=PooledConnection,
        )
        return cls(
            pool=pool,
            url=url,
            embedded_dir=settings.data_dir if embedded else None,
            idle_timeout_s=settings.embedded_idle_minutes * 60,
        )

    async def close(self) -> None:
        """Close the pool."""
        await self.pool.close()

    async def restart_embedded(self) -> bool:
        """Start the embedded server again if it was stopped under this pool; whether it had to be started."""
        if self.embedded_dir is None:
            return False
        return await asyncio.to_thread(restart_embedded_server, self.embedded_dir, idle_timeout_s=self.idle_timeout_s)

    @asynccontextmanager
    async def _acquire(self) -> AsyncIterator[Connection]:
        """A pooled connection; the new connection the pool makes for it failing is `DatabaseUnavailableError`."""
        try:
            conn = await self.pool.acquire()
        except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
            raise translate_connect_error(exc, url=self.url) from exc
        try:
            yield conn
        finally:
            await self.pool.release(conn)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection on the service role (no tenant scope)."""
        async with self._acquire() as conn:
            yield conn

    @asynccontextmanager
    async def tenant(self, organization_id: UUID) -> AsyncIterator[Connection]:
        """A connection in a transaction scoped to one organization, for reads row-level security checks.

        One message opens the scope and one closes it (ROLLBACK with the pool's reset query); the reads in
        between are the caller's. Nothing the scope set survives it (module docstring).
        """
        begin = _TENANT_BEGIN.format(organization=UUID(str(organization_id)))
        async with self._acquire() as conn:
            await conn.execute(begin)
            try:
                yield conn
            except asyncio.CancelledError:
                raise  # a cancelled read may still be running: the pool's release rolls back and resets
            except BaseException:
                await self._end_tenant(conn)
                raise
            else:
                await self._end_tenant(conn)

    @staticmethod
    async def _end_tenant(conn: Connection) -> None:
        """ROLLBACK and the whole reset query in one message; then the release need send nothing."""
        try:
            await conn.execute("ROLLBACK;\n" + conn.get_reset_query())
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            return  # the release rolls back and resets (or terminates a broken connection)
        _mark_clean(conn)

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        """Run one read on the service role and return its rows (the release sends no reset query)."""
        async with self._acquire() as conn:
            rows: list[asyncpg.Record] = await conn.fetch(query, *args)
            _mark_clean(conn)
            return rows

    async def fetchval(self, query: str, *args: Any) -> Any:
        """Run one statement on the service role and return the first value (no reset query on release)."""
        async with self._acquire() as conn:
            value = await conn.fetchval(query, *args)
            _mark_clean(conn)
            return value
