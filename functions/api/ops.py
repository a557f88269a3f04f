"""The operational endpoints: `/healthz`, `/readyz` and `/metrics`.

`/healthz` says the process answers, `/readyz` that the database is reachable and the migrations
current, and `/metrics` serves the Prometheus text. None of them needs the bearer token, and none of them ever
returns prompt text, a query or a tenant's data.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from functions._metrics import CONTENT_TYPE
from functions._services import ServiceSlot
from state.migrate import pending_migrations

__all__ = ["router"]

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up and serving."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready when the database answers and no migration is pending; 503 with the reason otherwise."""
    slot: ServiceSlot = request.app.state.slot
    if not slot.ready:
        return JSONResponse(
            status_code=503, content={"status": "starting", "database": False, "pending_migrations": None}
        )
    services = slot.get()
    try:
        async with asyncio.timeout(2.0):
            await services.db.fetchval("SELECT 1")
            pending = await pending_migrations(services.db.url)
    except Exception as exc:  # any failure here means not ready; the reason is the error type
        return JSONResponse(
            status_code=503, content={"status": "unavailable", "database": False, "reason": type(exc).__name__}
        )
    if pending:
        return JSONResponse(
            status_code=503, content={"status": "migrations_pending", "database": True, "pending_migrations": pending}
        )
    return JSONResponse(content={"status": "ready", "database": True, "pending_migrations": []})


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    """The service's Prometheus metrics."""
    return Response(content=request.app.state.metrics.render(), media_type=CONTENT_TYPE)
