"""The database boundary: one asyncpg pool with pgvector's codecs, and tenant-scoped connections.

`Database.open(settings)` connects to `DATABASE_URL` or starts the embedded default, applies the
migrations, and opens the pool. `Database.tenant(organization_id)` hands out a connection inside a
transaction that runs as the `ac_tenant` role with `app.organization_id` set, so row-level security
checks the tenancy a second time behind every explicit filter. Nothing outside `state` opens a pool.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias
from uuid import UUID

import asyncpg
from pgvector.asyncpg import register_vector

from state.embedded import embedded_server_url
from state.errors import DatabaseUnavailableError
from state.settings import Settings

__all__ = ["Connection", "Database", "init_connection", "resolve_database_url"]

TENANT_ROLE = "ac_tenant"

Connection: TypeAlias = "asyncpg.Connection[asyncpg.Record] | asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"
"""A connection as the pool hands it out."""


async def init_connection(conn: asyncpg.Connection) -> None:
    """Register the codecs every connection needs: jsonb as Python values, and pgvector's vector."""
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    has_vector = await conn.fetchval("SELECT 1 FROM pg_type WHERE typname = 'vector'")
    if has_vector:
        await register_vector(conn)


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

    @classmethod
    async def open(cls, settings: Settings, *, url: str | None = None, migrate: bool = True) -> Database:
        """Connect (starting the embedded server if needed), migrate, and open the pool."""
        from state.migrate import apply_migrations

        url = url or resolve_database_url(settings)
        if migrate:
            await apply_migrations(url)
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=settings.pool_min_size,
                max_size=settings.pool_max_size,
                init=init_connection,
            )
        except (OSError, asyncpg.PostgresError) as exc:
            raise DatabaseUnavailableError(f"cannot connect to the database: {exc}") from exc
        return cls(pool=pool, url=url)

    async def close(self) -> None:
        """Close the pool."""
        await self.pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection on the service role (no tenant scope)."""
        async with self.pool.acquire() as conn:
            yield conn

    @asynccontextmanager
    async def tenant(self, organization_id: UUID) -> AsyncIterator[Connection]:
        """A connection in a transaction scoped to one organization, for reads row-level security checks."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL ROLE {TENANT_ROLE}")
            await conn.execute("SELECT set_config('app.organization_id', $1, true)", str(organization_id))
            yield conn

    async def fetchval(self, query: str, *args: Any) -> Any:
        """Run one statement on the service role and return the first value."""
        async with self.pool.acquire() as conn:
            return await conn.fetchval(query, *args)
