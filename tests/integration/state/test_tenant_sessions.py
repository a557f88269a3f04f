"""A tenant session never reaches a borrower that did not ask for it (issue 24).

A pooled connection keeps the session of its last borrower (the tenant role with one organization, or the
service role), and the pool switches it on every acquisition, whatever path asks. These tests use a pool
of one connection, so every borrow is the very connection the tenant scope used (the backend pid says so).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from state.db import TENANT_ROLE, Database
from state.settings import load_settings
from tests.factories import Factory

_VIEW = (
    "SELECT current_user AS role, current_setting('app.organization_id', true) AS org,"
    " current_setting('statement_timeout') AS timeout, pg_backend_pid() AS pid"
)


@pytest.fixture
async def one(db_url: str) -> AsyncIterator[Database]:
    """A pool of exactly one connection on the test database."""
    database = await Database.open(load_settings(pool_min_size=1, pool_max_size=1), url=db_url, migrate=False)
    try:
        yield database
    finally:
        await database.close()


async def _every_service_borrow(db: Database) -> list[asyncpg.Record]:
    """What the session looks like to each way of borrowing a connection on the service role."""
    views = []
    async with db.connection() as conn:
        views.append(await conn.fetchrow(_VIEW))
    views.append((await db.fetch(_VIEW))[0])
    views.append(await db.pool.fetchrow(_VIEW))
    async with db.pool.acquire() as conn:
        views.append(await conn.fetchrow(_VIEW))
    return views


def _service(view: asyncpg.Record, pid: int) -> bool:
    return view["pid"] == pid and view["role"] != TENANT_ROLE and not view["org"] and view["timeout"] == "0"


async def test_a_borrower_after_a_tenant_scope_holds_the_service_session(one: Database) -> None:
    org = uuid.uuid4()
    async with one.tenant(org) as conn:
        inside = await conn.fetchrow(_VIEW)
    assert (inside["role"], inside["org"]) == (TENANT_ROLE, str(org))
    for view in await _every_service_borrow(one):
        assert _service(view, inside["pid"]), dict(view)
    # And again after each kind of service borrow, the next tenant scope is that organization's.
    async with one.tenant(org) as conn:
        again = await conn.fetchrow(_VIEW)
    assert (again["role"], again["org"], again["pid"]) == (TENANT_ROLE, str(org), inside["pid"])


async def test_the_next_tenant_scope_holds_its_own_organization_and_sees_only_its_rows(
    one: Database, factory: Factory
) -> None:
    a = await factory.tenant(companies=1)
    b = await factory.tenant(companies=2)
    async with one.tenant(a.id) as conn:
        seen_a = [r["id"] for r in await conn.fetch("SELECT id FROM public.crm_companies")]  # no filter on purpose
    async with one.tenant(b.id) as conn:
        view = await conn.fetchrow(_VIEW)
        seen_b = sorted(r["id"] for r in await conn.fetch("SELECT id FROM public.crm_companies"))
    assert seen_a == a.companies and seen_b == sorted(b.companies)
    assert (view["role"], view["org"]) == (TENANT_ROLE, str(b.id))


async def test_a_scope_that_failed_or_was_cancelled_leaves_nothing_behind(one: Database) -> None:
    org = uuid.uuid4()
    with pytest.raises(asyncpg.DivisionByZeroError):
        async with one.tenant(org) as conn:
            await conn.fetchval("SELECT 1 / 0")
    for view in await _every_service_borrow(one):
        assert view["role"] != TENANT_ROLE and not view["org"], dict(view)

    async def slow() -> None:
        async with one.tenant(org) as conn:
            await conn.fetchval("SELECT pg_sleep(30)")

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await slow()
    for view in await _every_service_borrow(one):
        assert view["role"] != TENANT_ROLE and not view["org"], dict(view)


async def test_session_settings_of_a_scope_or_a_borrow_never_reach_a_service_borrower(one: Database) -> None:
    org = uuid.uuid4()
    async with one.tenant(org) as conn:
        await conn.execute("SET statement_timeout = '1234'")  # a session-level setting inside a scope
        pid = await conn.fetchval("SELECT pg_backend_pid()")
    for view in await _every_service_borrow(one):
        assert _service(view, pid), dict(view)
    async with one.connection() as conn:  # a service borrower that takes the tenant role by hand
        await conn.execute(f"SET ROLE {TENANT_ROLE}")
        await conn.execute("SELECT set_config('app.organization_id', $1, false)", str(org))
    for view in await _every_service_borrow(one):
        assert _service(view, pid), dict(view)
