"""Whether the service can serve: the one readiness answer of `/readyz` and the console's health page.

Ready when the database answers, no migration is pending and the events leave (see `functions.api.ops` for
what each status means). This module must never answer HTTP: the interfaces do.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from state import outbox
from state.migrate import pending_migrations

if TYPE_CHECKING:
    from functions._lifecycle import DatabaseHealth
    from functions._metrics import Metrics
    from functions._services import ServiceSlot

__all__ = ["UNDELIVERABLE_AFTER_S", "UNDELIVERABLE_STUCK", "Readiness", "readiness"]

UNDELIVERABLE_AFTER_S: Final = 300.0
"""An event waiting this long with a send error is stuck (reported under `outbox` in `/readyz`)."""
UNDELIVERABLE_STUCK: Final = 2
"""This many stuck events, and none delivered for `UNDELIVERABLE_AFTER_S`, is 503 `events_undeliverable`."""


@dataclass(frozen=True, slots=True)
class Readiness:
    """The readiness answer: ready or not, its body, and the reason in words."""

    ready: bool
    """Whether the service can serve."""
    details: dict[str, Any]
    """The readiness body (`functions.api.ops.ReadyOut`)."""
    message: str
    """Why not, in words (`ready` when it is)."""


async def readiness(slot: ServiceSlot, health: DatabaseHealth | None, metrics: Metrics) -> Readiness:
    """Ready when the database answers and no migration is pending; not ready with a readable reason otherwise."""
    if not slot.ready:
        status = "database_unavailable" if slot.reason else "starting"
        reason = slot.reason or "the service is opening its database"
        return Readiness(False, {"status": status, "database": False, "reason": reason}, reason)
    services = slot.get()
    if health is not None and not await health.probe():
        details = {"status": "database_unavailable", "database": False, "reason": health.reason}
        return Readiness(False, details, health.reason or "the database does not answer")
    try:
        async with asyncio.timeout(services.settings.readiness_timeout_s):
            pending = await pending_migrations(services.db.url)
    except Exception as exc:  # any failure here means not ready; say why in words
        reason = f"cannot read the migrations: {type(exc).__name__}: {str(exc)[:200]}"
        return Readiness(False, {"status": "database_unavailable", "database": False, "reason": reason}, reason)
    if pending:
        message = f"{len(pending)} migration(s) not applied: {', '.join(pending)}; run `ac-context migrate`"
        return Readiness(
            False, {"status": "migrations_pending", "database": True, "pending_migrations": pending}, message
        )
    waiting = await outbox.backlog(services.db, stuck_after_s=UNDELIVERABLE_AFTER_S)
    metrics.set_outbox(waiting)
    events = {"waiting": waiting.waiting, "oldest_s": round(waiting.oldest_s, 3), "last_error": waiting.last_error}
    stuck = {"stuck": waiting.stuck, "oldest_stuck_age_s": round(waiting.oldest_stuck_s, 3),
             "last_error": waiting.stuck_error}  # fmt: skip
    if waiting.stuck >= UNDELIVERABLE_STUCK and not waiting.delivered_recently:
        reason = (
            f"{waiting.stuck} event(s) could not be sent to Inngest for {waiting.oldest_stuck_s:.0f} s and none "
            f"was delivered meanwhile: {waiting.stuck_error}"
        )
        details = {"status": "events_undeliverable", "database": True, "reason": reason, "pending_migrations": [],
                   "events": events, "outbox": stuck}  # fmt: skip
        return Readiness(False, details, reason)
    ready: dict[str, Any] = {"status": "ready", "database": True, "pending_migrations": [], "events": events}
    ready["outbox"] = stuck
    if services.db.replicas is not None:  # a standby down or lagging never fails readiness: reads use the primary
        try:
            async with asyncio.timeout(2.0):
                ready["standbys"] = await services.db.replicas.status()
        except TimeoutError:
            ready["standbys"] = [{"host": s.host(), "state": "unknown"} for s in services.db.replicas.standbys]
    return Readiness(True, ready, "ready")
