"""The service's life beside its database: start without it, say so, and recover when it returns.

`ServiceOpener` opens the services at start; when the database cannot be reached it does not fail the
process: it records the reason in the `ServiceSlot` (every route then answers 503 `database_unavailable`
and `/readyz` 503 with the reason) and tries again every `AC_CONTEXT_DATABASE_RETRY_INTERVAL_S` until it
opens. `DatabaseHealth` is the open service's view of the same question: a request that lost its
connection marks it down, and while it is down each request first probes the database (at most one probe
at a time), so every route answers 503 `database_unavailable` until a probe succeeds again. A probe that
fails on the embedded default, because its server was stopped under the service (`ac-context db stop
--force`, a crash), starts the server again and says so in one log line (docs/decisions.md,
"What happens to `db stop` while `serve` runs on the embedded database?").

This module must never hold a business rule; it opens, probes and reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import asyncpg

from functions._services import Services, ServiceSlot, close_services
from state.errors import DatabaseUnavailableError, MigrationError

__all__ = ["DatabaseHealth", "ServiceOpener", "is_unreachable"]

logger = logging.getLogger("functions.lifecycle")

_UNREACHABLE: tuple[type[BaseException], ...] = (
    DatabaseUnavailableError,
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.InterfaceError,
)


def is_unreachable(exc: BaseException) -> bool:
    """Whether opening failed because the database could not be reached (as opposed to a wrong setting)."""
    current: BaseException | None = exc
    for _ in range(8):
        if current is None:
            return False
        if isinstance(current, _UNREACHABLE) and not isinstance(current, MigrationError):
            return True
        current = current.__cause__ or current.__context__
    return False


def describe(exc: BaseException) -> str:
    """A readable reason without a traceback: the error type and its first line (a state error's line alone)."""
    if isinstance(exc, DatabaseUnavailableError):
        return str(exc).strip().splitlines()[0][:300]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


class ServiceOpener:
    """Opens the services now, or in the background until the database answers."""

    def __init__(
        self, slot: ServiceSlot, open_once: Callable[[], Awaitable[Services]], *, retry_interval_s: float
    ) -> None:
        self.slot = slot
        self.open_once = open_once
        self.retry_interval_s = retry_interval_s
        self._task: asyncio.Task[None] | None = None
        self.on_open: Callable[[Services], Awaitable[None]] | None = None

    async def start(self) -> None:
        """Open now; when the database is unreachable, record why and keep trying in the background."""
        if await self._try():
            return
        self._task = asyncio.create_task(self._retry_loop(), name="ac-context-open-database")

    async def _try(self) -> bool:
        try:
            services = await self.open_once()
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            reason = (
                describe(exc)
                if isinstance(exc, DatabaseUnavailableError)
                else f"cannot reach the database ({describe(exc)})"
            )
            logger.warning("starting without the database: %s", reason)
            self.slot.unavailable(reason)
            return False
        if self.on_open is not None:
            await self.on_open(services)
        self.slot.set(services)
        logger.info("the database is open")
        return True

    async def _retry_loop(self) -> None:
        while not self.slot.ready:
            await asyncio.sleep(self.retry_interval_s)
            try:
                await self._try()
            except Exception as exc:  # a wrong setting found late: keep reporting it, never crash the loop
                self.slot.unavailable(f"cannot open the database ({describe(exc)})")

    async def stop(self) -> None:
        """Stop retrying, and close the services if they were opened."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.slot.ready:
            services = self.slot.get()
            self.slot.set(None)
            await close_services(services)


class DatabaseHealth:
    """Whether the open database answers, as the last probe or the last lost connection says."""

    def __init__(self, slot: ServiceSlot, *, probe_timeout_s: float = 2.0) -> None:
        self.slot = slot
        self.probe_timeout_s = probe_timeout_s
        self.up = True
        self.reason: str | None = None
        self._lock = asyncio.Lock()
        self.checked_at = 0.0

    def mark_down(self, reason: str) -> None:
        """Record that a request lost its connection; requests probe before running until one succeeds."""
        self.up, self.reason = False, reason

    async def probe(self) -> bool:
        """Run `SELECT 1` (one probe at a time; a caller that waited reuses the probe it waited for)."""
        asked = time.monotonic()
        async with self._lock:
            if self.checked_at >= asked:
                return self.up
            try:
                await self._select_one()
            except Exception as exc:
                self.up, self.reason = False, f"the database does not answer ({describe(exc)})"
                await self._restart_embedded()
            else:
                self.up, self.reason = True, None
            self.checked_at = time.monotonic()
            return self.up

    async def _select_one(self) -> None:
        services = self.slot.get()
        async with asyncio.timeout(self.probe_timeout_s):
            await services.db.fetchval("SELECT 1")

    async def _restart_embedded(self) -> None:
        """Start the embedded server again if it was stopped under the service, and probe once more."""
        try:
            db = self.slot.get().db
            if not await db.restart_embedded():
                return
            logger.warning(
                "the embedded PostgreSQL in %s was stopped under the service; started it again", db.embedded_dir
            )
            await self._select_one()
        except Exception as exc:
            self.reason = f"the database does not answer ({describe(exc)})"
            return
        self.up, self.reason = True, None

    async def gate(self) -> None:
        """Raise `DatabaseUnavailableError` when the database is down and a probe does not bring it back."""
        if self.up or await self.probe():
            return
        raise DatabaseUnavailableError(self.reason or "the database is unreachable")
