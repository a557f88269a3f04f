"""FastAPI dependencies shared by the `/v1/` routers: the open services of the app.

Who may call a route, and the one answer for an unknown organization, are the route's scope
(`functions.api._scopes`). This module must never hold a business rule.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from functions._services import Services, ServiceSlot

__all__ = ["ServicesDep", "services"]


async def services(request: Request) -> Services:
    """The open services of this app, or 503 `database_unavailable`.

    That answer comes while the database cannot be reached: at start, or since a request lost its
    connection and no probe has succeeded since.
    """
    slot: ServiceSlot = request.app.state.slot
    opened = slot.get()
    health = getattr(request.app.state, "health", None)
    if health is not None:
        await health.gate()
    return opened


ServicesDep = Annotated[Services, Depends(services)]
"""The services, as a route parameter."""
