"""The database boundary: one asyncpg pool with pgvector's codecs, and tenant-scoped connections.

`Database.open(settings)` connects to `DATABASE_URL` or starts the embedded default, applies the
migrations, and opens the pool. `Database.tenant(organization_id)` hands out a connection that runs as
the `ac_tenant` role with `app.organization_id` set, so row-level security checks the tenancy a second
time behind every explicit filter. Nothing outside `state` opens a pool.

What a tenant scope sends: nothing but its reads when the connection it borrows is already
that organization's. A pooled connection remembers which session it holds (the service role, or the tenant
role with one organization set at session level), and the pool's `setup` hook, which runs on every
acquisition whatever path asked for it (`tenant`, `connection`, `fetch`, `pool.fetch`, `pool.acquire`),
switches it to the session the borrower asked for in one message before the borrower's first statement:
`RESET ROLE; RESET ALL` for the service role, `RESET ALL; SET ROLE ...; SET app.organization_id ...` for a
tenant. So no borrower ever sees another organization's setting or the tenant role it did not ask for, and
row-level security still checks every tenant read. A release after a scope or a one-statement read of this
module sends nothing (the connection never left this module, or its session is the tracked one); any other
release gets asyncpg's full reset query plus `RESET ROLE`, after which the session is the service one.

Inside `shared_sessions()` (a brief build's reads), tenant scopes and one-statement service reads of one session
share one pooled connection, one borrower at a time: a build switches at most two sessions (its tenant's and
the service role's) however many reads it sends (see the function for the rules that keep it safe).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeAlias, TypeVar
from uuid import UUID

import asyncpg
from pgvector.asyncpg import register_vector

from state._connect import create_pool
from state.embedded import embedded_server_url, restart_embedded_server
from state.errors import connect_failure_reason, translate_connect_error
from state.replicas import ReadRouter, Standby
from state.settings import Settings

__all__ = [
    "Connection",
    "Database",
    "PooledConnection",
    "init_connection",
    "resolve_database_url",
    "shared_sessions",
]

TENANT_ROLE = "ac_tenant"

_TO_TENANT = f"RESET ALL; SET ROLE {TENANT_ROLE}; SET app.organization_id = '{{organization}}'"
"""The one message that makes a session one organization's (canonical UUID text: hex digits and dashes only)."""
_TO_SERVICE = "RESET ROLE; RESET ALL"
"""The one message that makes a tenant session the service role's again."""
_UNKNOWN: Final = "unknown"
"""The session of a connection whose last switch or reset did not finish: the next acquisition switches it."""

_WANTED: ContextVar[UUID | None] = ContextVar("ac_context_wanted_session", default=None)
"""The session the acquisition in progress asks for: an organization (a tenant scope) or None (the service)."""

T = TypeVar("T")


@dataclass
class _OnStandby:
    """A read running on a standby: where, and the first error one of its statements met there."""

    standby: Standby
    error: BaseException | None = None


_ON_STANDBY: ContextVar[_OnStandby | None] = ContextVar("ac_context_on_standby", default=None)
"""Set while a read runs on a standby (`Database.on_standby`): every acquisition takes the standby's pool."""


@dataclass
class _Lease:
    """One pooled connection a `shared_sessions` scope holds for one session (a tenant, or the service role)."""

    pool: asyncpg.Pool
    standby: _OnStandby | None = None
    """The standby read this lease serves (its failures are that standby's), None on the primary."""
    conn: Any = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def give_back(self, *, clean: bool = True) -> None:
        """Return the connection to its pool; a failure is the standby's, or logged (the reads are done)."""
        conn, self.conn = self.conn, None
        if conn is None:
            return
        if clean:
            _mark_clean(conn)  # each borrow was a tenant scope or a one-statement read that completed
        try:
            await self.pool.release(conn)
        except Exception as exc:
            _failed_on_standby(self.standby, exc)
            logging.getLogger(__name__).warning("a shared connection failed its release: %s", exc)


@dataclass(eq=False)
class _Leases:
    """The connections of one `shared_sessions` scope, by (pool, session), and the tasks borrowing one now."""

    leases: dict[tuple[int, UUID | None], _Lease] = field(default_factory=dict)
    borrowing: set[asyncio.Task[Any]] = field(default_factory=set)
    closed: bool = False


_ACTIVE_SCOPES: set[_Leases] = set()
"""Every `shared_sessions` scope open in this process (an acquisition that must wait sweeps their idle leases)."""

_SWEEP_EVERY_S: Final = 0.02
"""How often an acquisition still waiting for the pool gives back every open scope's idle leases."""

_LEASES: ContextVar[_Leases | None] = ContextVar("ac_context_leases", default=None)
"""Set inside `Database.shared_sessions()`: tenant scopes and one-statement reads borrow the scope's leases."""

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
    """A pool connection that knows which session it holds, and whose release may skip the reset query."""

    __slots__ = ("_session", "_session_clean")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._session: UUID | str | None = None
        self._session_clean = False

    def session(self) -> UUID | str | None:
        """The organization this session is scoped to, None for the service role, or `_UNKNOWN`."""
        return self._session

    def set_session(self, session: UUID | str | None) -> None:
        """Record the session a switch just made (or `_UNKNOWN` before one is sent)."""
        self._session = session

    def mark_session_clean(self) -> None:
        """Say that nothing but tracked state changed since the acquisition: the next release sends nothing."""
        self._session_clean = True

    def mark_session_dirty(self) -> None:
        """Undo `mark_session_clean`: the next release sends the full reset (a read was cancelled mid-way)."""
        self._session_clean = False

    def get_reset_query(self) -> str:
        """Nothing once after `mark_session_clean`; else asyncpg's reset query and RESET ROLE (the service)."""
        if self._session_clean:
            self._session_clean = False
            return ""
        self._session = None  # RESET ALL clears the organization, RESET ROLE the role: a service session
        query: str = super().get_reset_query()
        return query + "\nRESET ROLE;"


async def _switch_session(conn: Connection) -> None:
    """The pool's `setup`: make the session the one this acquisition asked for, in one message when it differs."""
    session, set_session = getattr(conn, "session", None), getattr(conn, "set_session", None)
    if session is None or set_session is None:
        return  # not a PooledConnection: a pool this module did not open
    wanted = _WANTED.get()
    if session() == wanted:
        return
    set_session(_UNKNOWN)
    await conn.execute(_TO_SERVICE if wanted is None else _TO_TENANT.format(organization=wanted))
    set_session(wanted)


def _failed_on_standby(scope: _OnStandby | None, exc: Exception) -> None:
    """Record the first failure of a standby read: `Database.on_standby` runs it again on the primary."""
    if scope is not None and scope.error is None:
        scope.error = exc


def _mark_clean(conn: Connection) -> None:
    """Mark a pooled connection's session clean (a connection of another class is reset as usual)."""
    mark = getattr(conn, "mark_session_clean", None)
    if mark is not None:
        mark()


def _mark_dirty(conn: Connection) -> None:
    """Make the next release of a pooled connection send the full reset."""
    mark = getattr(conn, "mark_session_dirty", None)
    if mark is not None:
        mark()


@asynccontextmanager
async def shared_sessions() -> AsyncIterator[None]:
    """Let the reads inside (and the tasks started inside) share one pooled connection per session.

    Inside, every tenant scope of one organization, and every one-statement service read (`Database.fetch`,
    `fetchval`), borrows the same pooled connection of its pool, one borrower at a time, instead of one
    connection each: concurrent reads queue for it. A brief's reads then switch at most two sessions (its
    tenant's and the service role's) whatever the connections held before, and take two connections from the
    pool instead of one per read. A borrow nested in another borrow of the same task takes a connection of its
    own (so no task waits for a lease while it holds one); `Database.connection()` never shares (its borrower
    may change the session). A read that failed or was cancelled mid-way gives its connection back with the
    full reset, and the next borrower takes another. Every leased connection goes back to its pool when the
    scope ends, and a borrow that starts after the end takes a connection of its own.

    The pool comes first. While it has no idle connection, a borrow whose lease holds none waits for the pool
    as it would without a scope, and a borrow that ends gives its lease back at once: under pressure a scope
    reads as it would without one. And an acquisition (leased or not) that waits for the pool gives back every
    open scope's leases no one is using, every 20 ms while it waits (`_acquire_sweeping`): no scope holds an
    idle connection while another waits for one.
    """
    leases = _Leases()
    token = _LEASES.set(leases)
    _ACTIVE_SCOPES.add(leases)
    try:
        yield
    finally:
        _LEASES.reset(token)
        _ACTIVE_SCOPES.discard(leases)
        leases.closed = True
        # Last taken, first given back: the pool hands out the last connection returned first (LIFO), so the
        # next scope's first borrow (a brief's tenant read) finds the session it asks for already set.
        for lease in reversed(leases.leases.values()):
            async with lease.lock:
                await lease.give_back()


def _short(pool: asyncpg.Pool) -> bool:
    """True when `pool` has no idle connection and may open no other: an acquisition now would wait."""
    return bool(pool.get_idle_size() == 0 and pool.get_size() >= pool.get_max_size())


async def _acquire_sweeping(pool: asyncpg.Pool) -> Any:
    """`pool.acquire()`; while it waits, every open scope's idle leases of `pool` go back every `_SWEEP_EVERY_S`.

    A scope holding an idle connection while others wait for the pool could otherwise wait for ever when every
    connection is held the same way (builds each holding one session and waiting for another, or for a plain
    `connection()`): a waiting acquisition sweeps them, so every connection a waiter does not get is in use by
    a read that will end.
    """
    acquiring = asyncio.ensure_future(pool.acquire())  # the task copies the context: `_WANTED` for `setup`
    try:
        while True:
            done, _ = await asyncio.wait({acquiring}, timeout=_SWEEP_EVERY_S)
            if done:
                return acquiring.result()
            if _ACTIVE_SCOPES:
                await _give_back_idle(pool)
    except BaseException:
        if not acquiring.done():
            acquiring.cancel()
        try:
            conn = await acquiring
        except BaseException:
            pass
        else:
            await pool.release(conn)  # acquired as this one was cancelled: straight back
        raise


async def _give_back_idle(pool: asyncpg.Pool) -> None:
    """Return to `pool` every leased connection of it that no borrower holds now, in every open scope."""
    for scope in list(_ACTIVE_SCOPES):
        for lease in list(scope.leases.values()):
            if lease.pool is pool and lease.conn is not None and not lease.lock.locked():
                await lease.give_back()


class _OneLinePoolWarnings(logging.Filter):
    """asyncpg's pool logs a traceback each time it fails to reconnect while the database is down: one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            why = connect_failure_reason(record.exc_info[1])
            record.msg, record.args = f"{record.getMessage()} ({why})", None
            record.exc_info, record.exc_text = None, None
        return True


_POOL_LOG_FILTER = _OneLinePoolWarnings()


async def _open_pool(url: str, settings: Settings, *, min_size: int | None = None) -> asyncpg.Pool:
    """A pool on `url` with this module's codecs and session switching."""
    return await create_pool(
        url,
        min_size=settings.pool_min_size if min_size is None else min_size,
        max_size=settings.pool_max_size,
        init=init_connection,
        setup=_switch_session,
        connection_class=PooledConnection,
    )


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
    replicas: ReadRouter | None = None
    """The standbys reads may run on (`AC_CONTEXT_READ_DATABASE_URLS`); None: every read on the primary."""

    @classmethod
    async def open(cls, settings: Settings, *, url: str | None = None, migrate: bool = True) -> Database:
        """Connect (starting the embedded server if needed), migrate, and open the pool."""
        from state.migrate import apply_migrations

        logging.getLogger("asyncpg.pool").addFilter(_POOL_LOG_FILTER)  # once: a logger keeps one of each filter
        embedded = url is None and settings.database_url is None
        url = url or resolve_database_url(settings)
        if migrate:
            await apply_migrations(url)
        pool = await _open_pool(url, settings)
        database = cls(
            pool=pool,
            url=url,
            embedded_dir=settings.data_dir if embedded else None,
            idle_timeout_s=settings.embedded_idle_minutes * 60,
        )
        if settings.read_urls():
            database.use_standbys(settings.read_urls(), settings)
        return database

    def use_standbys(self, urls: list[str], settings: Settings) -> ReadRouter:
        """Route this database's standby reads to `urls` (pools open at the first read); the router."""

        async def open_standby(standby_url: str) -> asyncpg.Pool:
            return await _open_pool(standby_url, settings, min_size=0)

        self.replicas = ReadRouter.from_settings(self.pool, urls, open_standby, settings)
        self.replicas.start()
        return self.replicas

    async def close(self) -> None:
        """Close the pool (and the standbys')."""
        if self.replicas is not None:
            await self.replicas.close()
        await self.pool.close()

    async def note_write(self, organization_id: UUID | None) -> None:
        """Say that `organization_id` committed a write: its next reads see it on a standby, or run on the primary.

        Nothing at all without standbys. `None` is a platform write (every organization's reads wait for it).
        """
        if self.replicas is not None:
            await self.replicas.note_write(organization_id)

    async def on_standby(
        self,
        organization_id: UUID | None,
        call: Callable[[], Awaitable[T]],
        *,
        failed: Callable[[T], bool] | None = None,
    ) -> T:
        """Run the read `call` on a standby that has what this organization wrote, else on the primary.

        A read that failed on the standby (any exception of an acquisition, a statement or a release there,
        recorded by `_acquire`), or whose answer `failed` says is incomplete, runs once more on the primary
        (`state.replicas`: each fallback counted by reason); an exception no standby step raised is the read's
        own answer, and a failure on the primary is never retried. Without standbys it is `call()`.
        """
        router = self.replicas
        if router is None or _ON_STANDBY.get() is not None:
            return await call()
        choice = await router.choose(organization_id)
        if choice.standby is None:
            if choice.reason is not None:
                router.fallbacks[choice.reason] += 1
            return await call()
        scope = _OnStandby(choice.standby)
        token = _ON_STANDBY.set(scope)
        try:
            result = await call()
        except Exception:
            if scope.error is None:
                raise  # no statement failed on the standby: the read's own answer, the same on the primary
            router.failed(choice.standby, scope.error)
        else:
            if failed is None or not failed(result):
                router.served[choice.standby.host()] += 1
                return result
            router.failed(choice.standby, scope.error)
        finally:
            _ON_STANDBY.reset(token)
        return await call()

    @staticmethod
    def serving_standby() -> str | None:
        """The host of the standby the current read runs on, None on the primary."""
        scope = _ON_STANDBY.get()
        return None if scope is None else scope.standby.host()

    async def restart_embedded(self) -> bool:
        """Start the embedded server again if it was stopped under this pool; whether it had to be started."""
        if self.embedded_dir is None:
            return False
        return await asyncio.to_thread(restart_embedded_server, self.embedded_dir, idle_timeout_s=self.idle_timeout_s)

    @asynccontextmanager
    async def _acquire(self, organization_id: UUID | None = None, *, share: bool = False) -> AsyncIterator[Connection]:
        """A pooled connection holding the service session, or `organization_id`'s tenant session.

        With `share`, inside `shared_sessions` the connection is that scope's lease for the session. The new
        connection the pool makes for it failing is `DatabaseUnavailableError`.
        """
        scope = _ON_STANDBY.get()
        pool = self.pool if scope is None or scope.standby.pool is None else scope.standby.pool
        standby = None if pool is self.pool else scope  # a failure on the primary is never a standby's
        leases = _LEASES.get() if share else None
        task = asyncio.current_task()
        lease: _Lease | None = None
        if leases is not None and not leases.closed and task is not None and task not in leases.borrowing:
            lease = leases.leases.setdefault((id(pool), organization_id), _Lease(pool, standby))
            if lease.conn is None and not lease.lock.locked() and _short(pool):
                lease = None  # the pool is short: this read waits for the pool as it would without a scope
        if lease is not None and leases is not None and task is not None:
            async with lease.lock:
                if lease.conn is None:
                    lease.conn = await self._take(pool, organization_id, standby)
                conn = lease.conn
                leases.borrowing.add(task)
                try:
                    yield conn
                except BaseException as exc:
                    # A cancelled statement may still run, a failed one may have left the connection broken or
                    # in a transaction: it leaves the lease with the full reset, and the next borrower takes another.
                    if isinstance(exc, Exception):
                        _failed_on_standby(standby, exc)
                    _mark_dirty(conn)
                    await lease.give_back(clean=False)
                    raise
                else:
                    if _short(pool):
                        await lease.give_back()  # the pool is short: keep no connection between reads
                finally:
                    leases.borrowing.discard(task)
            return
        conn = await self._take(pool, organization_id, standby)
        try:
            yield conn
        except Exception as exc:
            _failed_on_standby(standby, exc)
            raise
        finally:
            try:
                await pool.release(conn)
            except Exception as exc:
                _failed_on_standby(standby, exc)
                raise

    async def _take(self, pool: asyncpg.Pool, organization_id: UUID | None, standby: _OnStandby | None) -> Any:
        """A connection of `pool`, switched by the `setup` hook to `organization_id`'s session (None: the service)."""
        token = _WANTED.set(organization_id)
        try:
            return await _acquire_sweeping(pool)
        except Exception as exc:
            _failed_on_standby(standby, exc)  # whatever the class: a standby shutting down raises asyncpg's own
            if isinstance(exc, OSError | TimeoutError | asyncpg.PostgresError):
                raise translate_connect_error(exc, url=self.url if standby is None else standby.standby.host()) from exc
            raise
        finally:
            _WANTED.reset(token)  # an acquisition inside the scope asks for the service again

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection on the service role (no tenant scope)."""
        async with self._acquire() as conn:
            yield conn

    @asynccontextmanager
    async def tenant(self, organization_id: UUID) -> AsyncIterator[Connection]:
        """A connection scoped to one organization (the tenant role), for reads row-level security checks.

        The pool's `setup` switched the session to this organization before the first read, in one message
        or none (module docstring); the release sends nothing unless the scope was cancelled mid-read.
        """
        async with self._acquire(UUID(str(organization_id)), share=True) as conn:
            try:
                yield conn
            except asyncio.CancelledError:
                raise  # a cancelled read may still be running: the release resets the whole session
            except BaseException:
                _mark_clean(conn)
                raise
            else:
                _mark_clean(conn)

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        """Run one read on the service role and return its rows (the release sends no reset query)."""
        async with self._acquire(share=True) as conn:
            rows: list[asyncpg.Record] = await conn.fetch(query, *args)
            _mark_clean(conn)
            return rows

    async def fetchval(self, query: str, *args: Any) -> Any:
        """Run one statement on the service role and return the first value (no reset query on release)."""
        async with self._acquire(share=True) as conn:
            value = await conn.fetchval(query, *args)
            _mark_clean(conn)
            return value
