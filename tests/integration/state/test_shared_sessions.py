"""The reads of one `shared_sessions` scope share one connection per session, and never another's (issue 45).

A brief's sources borrow inside one scope: every tenant scope of one organization gets the same connection
(its lease), every one-statement service read another, one borrower at a time. These tests hold the rules
that keep it safe: a lease is one session's and no other's, a cancelled read takes its connection out of the
lease, a scope never waits for an exhausted pool while it holds a connection nobody uses, and everything goes
back to the pool at the end.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from state.db import TENANT_ROLE, Database, shared_sessions
from state.settings import load_settings

_VIEW = "SELECT current_user AS role, current_setting('app.organization_id', true) AS org, pg_backend_pid() AS pid"


async def _pool(db_url: str, size: int) -> Database:
    return await Database.open(load_settings(pool_min_size=size, pool_max_size=size), url=db_url, migrate=False)


@pytest.fixture
async def four(db_url: str) -> AsyncIterator[Database]:
    """A pool of four connections."""
    database = await _pool(db_url, 4)
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
async def two(db_url: str) -> AsyncIterator[Database]:
    """A pool of two connections: one scope's two sessions fill it."""
    database = await _pool(db_url, 2)
    try:
        yield database
    finally:
        await database.close()


async def _tenant_view(db: Database, org: uuid.UUID) -> asyncpg.Record:
    async with db.tenant(org) as conn:
        view = await conn.fetchrow(_VIEW)
        await asyncio.sleep(0.01)  # overlap the other borrowers
    assert view is not None
    return view


async def test_each_session_of_a_scope_has_one_connection_and_only_its_own_setting(four: Database) -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    async with shared_sessions():
        views = await asyncio.gather(
            *(_tenant_view(four, a) for _ in range(3)),
            *(_tenant_view(four, b) for _ in range(3)),
            *(four.fetch(_VIEW) for _ in range(3)),
        )
    tenant_a, tenant_b = views[:3], views[3:6]
    service = [rows[0] for rows in views[6:]]  # type: ignore[index]
    assert all((v["role"], v["org"]) == (TENANT_ROLE, str(a)) for v in tenant_a)
    assert all((v["role"], v["org"]) == (TENANT_ROLE, str(b)) for v in tenant_b)
    assert all(v["role"] != TENANT_ROLE and not v["org"] for v in service)
    pids = [{v["pid"] for v in group} for group in (tenant_a, tenant_b, service)]
    assert [len(p) for p in pids] == [1, 1, 1], "one connection per session"
    assert len(set.union(*pids)) == 3, "and never one connection for two sessions"
    # Back in the pool, each connection serves whoever asks next with that borrower's own session.
    for _ in range(4):
        assert (await four.fetch(_VIEW))[0]["role"] != TENANT_ROLE
    assert (await _tenant_view(four, b))["org"] == str(b)


async def test_a_cancelled_read_takes_its_connection_out_of_the_lease(four: Database) -> None:
    org = uuid.uuid4()

    async def slow() -> None:
        async with four.tenant(org) as conn:
            await conn.fetchval("SELECT pg_sleep(30)")

    async with shared_sessions():
        async with four.tenant(org) as conn:
            await conn.execute("SET statement_timeout = '1234'")  # a mark on the lease's session
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await slow()
        async with four.tenant(org) as conn:
            after = await conn.fetchrow(_VIEW + ", current_setting('statement_timeout') AS timeout")
    assert after is not None and (after["role"], after["org"]) == (TENANT_ROLE, str(org))
    # The connection that ran the cancelled read left the lease with the full reset (the mark is gone), and the
    # next borrower took a connection switched afresh to its organization.
    assert after["timeout"] != "1234s" and after["timeout"] != "1234ms", dict(after)
    for _ in range(4):  # the cancelled read's connection went back with the full reset: a service session
        view = (await four.fetch(_VIEW))[0]
        assert view["role"] != TENANT_ROLE and not view["org"], dict(view)


async def test_scopes_that_each_hold_one_session_never_wait_for_each_other_on_an_exhausted_pool(two: Database) -> None:
    barrier = asyncio.Barrier(2)

    async def build(org: uuid.UUID) -> tuple[asyncpg.Record, asyncpg.Record]:
        async with shared_sessions():
            tenant = await _tenant_view(two, org)
            await barrier.wait()  # both scopes now hold their tenant lease: the pool of two is empty
            service = (await two.fetch(_VIEW))[0]
        return tenant, service

    a, b = uuid.uuid4(), uuid.uuid4()
    async with asyncio.timeout(10):  # each scope would wait for ever for the connection the other holds idle
        answers = await asyncio.gather(build(a), build(b))
    for org, (tenant, service) in zip((a, b), answers, strict=True):
        assert (tenant["role"], tenant["org"]) == (TENANT_ROLE, str(org))
        assert service["role"] != TENANT_ROLE and not service["org"]


async def test_a_nested_borrow_and_a_connection_borrow_never_share_a_lease(four: Database) -> None:
    org = uuid.uuid4()
    async with asyncio.timeout(10), shared_sessions():  # a nested borrow of the lease would wait for itself
        async with four.tenant(org) as outer:
            outer_pid = await outer.fetchval("SELECT pg_backend_pid()")
            async with four.tenant(org) as inner:  # the same task inside its own borrow: a connection of its own
                inner_view = await inner.fetchrow(_VIEW)
        async with four.connection() as conn:  # may change its session: never a lease
            await conn.execute("SET statement_timeout = '4321'")
            own_pid = await conn.fetchval("SELECT pg_backend_pid()")
        service = (await four.fetch(_VIEW + ", current_setting('statement_timeout') AS timeout"))[0]
    assert inner_view is not None and inner_view["pid"] != outer_pid
    assert (inner_view["role"], inner_view["org"]) == (TENANT_ROLE, str(org))
    assert service["timeout"] != "4321" or service["pid"] != own_pid


async def test_a_failed_read_takes_its_connection_out_of_the_lease(four: Database) -> None:
    org = uuid.uuid4()
    async with shared_sessions():
        async with four.tenant(org) as conn:
            await conn.execute("SET statement_timeout = '1234'")  # a mark on the lease's session
        with pytest.raises(asyncpg.DivisionByZeroError):
            async with four.tenant(org) as conn:
                await conn.fetchval("SELECT 1 / 0")
        async with four.tenant(org) as conn:
            after = await conn.fetchrow(_VIEW + ", current_setting('statement_timeout') AS timeout")
    assert after is not None and (after["role"], after["org"]) == (TENANT_ROLE, str(org))
    assert after["timeout"] != "1234ms", "a failed read's connection left the lease with the full reset"


async def test_a_lease_whose_read_ends_while_another_scope_waits_for_the_pool_gives_its_connection_back(
    two: Database,
) -> None:
    barrier = asyncio.Barrier(2)

    async def build(org: uuid.UUID) -> asyncpg.Record:
        held = asyncio.Event()
        async with shared_sessions():

            async def busy_tenant() -> None:
                async with two.tenant(org) as conn:
                    await barrier.wait()  # both scopes hold a busy tenant lease: the pool of two is empty
                    held.set()
                    await conn.fetchval("SELECT pg_sleep(0.2)")

            async def service() -> asyncpg.Record:
                await held.wait()  # asks while its own tenant lease is busy, so nothing is idle to give back
                return (await two.fetch(_VIEW))[0]

            _, view = await asyncio.gather(busy_tenant(), service())
        return view

    async with asyncio.timeout(10):  # each scope's service read would wait for the other's idle tenant lease
        views = await asyncio.gather(build(uuid.uuid4()), build(uuid.uuid4()))
    assert all(v["role"] != TENANT_ROLE and not v["org"] for v in views)


async def test_when_the_pool_is_short_a_scope_reads_as_it_would_without_one(two: Database) -> None:
    org = uuid.uuid4()
    held, free = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with two.connection():
            held.set()
            await free.wait()

    holders = [asyncio.create_task(hold()) for _ in range(2)]
    await held.wait()
    await asyncio.sleep(0.05)  # both connections borrowed: the pool is short

    async def slow_read() -> int:
        async with two.tenant(org) as conn:
            pid: int = await conn.fetchval("SELECT pg_backend_pid() FROM pg_sleep(0.2)")
            return pid

    async with shared_sessions():
        reads = [asyncio.create_task(slow_read()) for _ in range(2)]
        await asyncio.sleep(0.05)  # both reads wait for the pool now
        free.set()
        pids = await asyncio.gather(*reads)
    await asyncio.gather(*holders)
    # Each read waited for the pool on its own and got a connection: no read queued behind a lease that had none.
    assert len(set(pids)) == 2, pids


async def test_an_acquisition_waiting_for_the_pool_takes_back_a_scopes_idle_lease(two: Database) -> None:
    org = uuid.uuid4()
    held, done = asyncio.Event(), asyncio.Event()

    async def other_borrower() -> None:
        async with two.connection():
            held.set()
            await done.wait()  # holds the other connection until the scope's plain borrow is served

    async with asyncio.timeout(10), shared_sessions():  # the scope would wait for its own idle lease for ever
        await _tenant_view(two, org)  # the lease keeps its connection: the pool had another idle one
        other = asyncio.create_task(other_borrower())
        await held.wait()
        async with two.connection() as conn:  # never a lease: it waits for the pool, which the lease empties
            role = await conn.fetchval("SELECT current_user")
        done.set()
        await other
    assert role != TENANT_ROLE
