"""The operational endpoints: `/healthz`, `/readyz` and `/metrics`.

`/healthz` says the process answers, `/readyz` that the database is reachable and the migrations current (503
in the error envelope while it is not, including a process that started without it: `error.code` is
`service_not_ready` while starting, else the readiness `status`; `error.message` the reason in words; and
`error.details` the readiness body the 200 answers, with its `reason`) and that the events
leave: one event stuck (waiting five minutes with a send error, an oversized one say) is reported under
`outbox` and in the `ac_context_outbox_stuck_events` gauge without failing readiness, and only when no
event gets through (two or more stuck and none left for five minutes: a rejected event key, an event API
that is down) is it 503 `events_undeliverable` with Inngest's answer. `/metrics` serves the Prometheus
text, with the outbox gauges and the overdue
knowledge sources per organization counted by one indexed statement at each scrape (bounded by
`OVERDUE_COUNT_TIMEOUT_S`; a database that does not answer leaves that gauge empty and the rest is served).
None of them needs the bearer token, and none of them ever returns prompt text, a query or a tenant's data.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict

from functions._metrics import CONTENT_TYPE
from functions._readiness import UNDELIVERABLE_AFTER_S, UNDELIVERABLE_STUCK, readiness
from functions._services import ServiceSlot
from functions.api._http import ErrorEnvelope, error_response
from functions.errors import http_status
from knowledge.ingestion.sources import overdue_source_counts
from state import outbox

__all__ = ["OVERDUE_COUNT_TIMEOUT_S", "UNDELIVERABLE_AFTER_S", "UNDELIVERABLE_STUCK", "router"]

router = APIRouter(tags=["operations"])
logger = logging.getLogger(__name__)

OVERDUE_COUNT_TIMEOUT_S: Final = 2.0
"""The longest a scrape waits for the overdue count before it serves the other metrics without it."""


class HealthOut(BaseModel):
    """The process answers."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    status: str
    """Always `ok`."""


class ReadyOut(BaseModel):
    """Whether the service can serve: its database answers and no migration is pending."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    status: str
    """`ready`, `starting`, `database_unavailable`, `migrations_pending` or `events_undeliverable`."""
    database: bool
    """Whether the database answers."""
    reason: str | None = None
    """Why the database is not available, in words (only when it is not)."""
    pending_migrations: list[str] | None = None
    """The migration files not yet applied (empty when ready; absent while the database is unavailable)."""
    events: EventsOut | None = None
    """The outbox: events waiting to be sent to Inngest (absent while the database is unavailable)."""
    outbox: OutboxOut | None = None
    """The stuck events, which never fail readiness alone (absent while the database is unavailable)."""
    standbys: list[StandbyOut] | None = None
    """Each standby of `AC_CONTEXT_READ_DATABASE_URLS` and its lag (absent without standbys); never fails readiness."""


class StandbyOut(BaseModel):
    """One standby as a read sees it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    host: str
    """Its host and port (never its password)."""
    state: str
    """`streaming`, `down`, `promoted` (no longer a standby: reads leave it) or `unknown`."""
    lag_bytes: int | None = None
    """WAL bytes it had still to replay (while streaming)."""
    lag_ms: float | None = None
    """How long ago the primary passed the position it has replayed, in milliseconds (while streaming)."""
    error: str | None = None
    """Why it is down."""


class OutboxOut(BaseModel):
    """The events stuck in the outbox: waiting five minutes or more with a send error."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    stuck: int
    """Events stuck (0 when none is)."""
    oldest_stuck_age_s: float
    """Age in seconds of the oldest stuck event (0 when none is)."""
    last_error: str | None
    """The newest error among the stuck events (an oversized or malformed event, a rejected key)."""


class EventsOut(BaseModel):
    """The events the service has not yet sent to Inngest."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    waiting: int
    """Events waiting in the outbox."""
    oldest_s: float
    """Age in seconds of the oldest waiting event (0 when none waits)."""
    last_error: str | None
    """What Inngest (or the network) answered to the newest failed send, e.g. a rejected event key."""


@router.get("/healthz", response_model=HealthOut)
async def healthz() -> dict[str, str]:
    """The process is up and serving."""
    return {"status": "ok"}


def _not_ready(details: dict[str, Any], message: str) -> JSONResponse:
    """503 in the error envelope; the code is the readiness status (`service_not_ready` while starting)."""
    code = "service_not_ready" if details["status"] == "starting" else details["status"]
    return error_response(http_status(code), code, message, details=details)


@router.get(
    "/readyz",
    response_model=ReadyOut,
    responses={503: {"model": ErrorEnvelope, "description": "Not ready, in the error envelope: `service_not_ready` "
                     "(starting), `database_unavailable`, `migrations_pending` or `events_undeliverable` (two or more "
                     "events stuck five minutes with a send error and none delivered meanwhile, such as an event key "
                     "Inngest rejects); `details` is the readiness body (`ReadyOut`), with the reason or the pending "
                     "files."}},
)  # fmt: skip
async def readyz(request: Request) -> JSONResponse:
    """Ready when the database answers and no migration is pending; 503 with a readable reason otherwise."""
    health = getattr(request.app.state, "health", None)
    answer = await readiness(request.app.state.slot, health, request.app.state.metrics)
    if not answer.ready:
        return _not_ready(answer.details, answer.message)
    return JSONResponse(content=answer.details)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"description": "The Prometheus text exposition format.",
                     "content": {CONTENT_TYPE: {"schema": {"type": "string"}}}}},
)  # fmt: skip
async def metrics(request: Request) -> Response:
    """The service's Prometheus metrics, with the overdue knowledge sources per organization counted now."""
    slot: ServiceSlot = request.app.state.slot
    counts = None
    waiting = None
    if slot.ready:
        try:
            async with asyncio.timeout(OVERDUE_COUNT_TIMEOUT_S):
                counts = await overdue_source_counts(slot.get().db)
                waiting = await outbox.backlog(slot.get().db, stuck_after_s=UNDELIVERABLE_AFTER_S)
        except Exception as exc:  # the other metrics are still worth serving
            logger.warning("the overdue source count or the outbox backlog failed: %s", type(exc).__name__)
    request.app.state.metrics.set_overdue_sources(counts)
    request.app.state.metrics.set_outbox(waiting)
    request.app.state.metrics.set_standbys(slot.get().db.replicas if slot.ready else None)
    return Response(content=request.app.state.metrics.render(), media_type=CONTENT_TYPE)
