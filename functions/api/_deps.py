"""FastAPI dependencies shared by the `/v1/` routers: the open services of the app.

This module must never hold a business rule.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from functions._services import Services, ServiceSlot

__all__ = ["ServicesDep", "services"]


def services(request: Request) -> Services:
    """The open services of this app (503 `service_not_ready` before the lifespan opened them)."""
    slot: ServiceSlot = request.app.state.slot
    return slot.get()


ServicesDep = Annotated[Services, Depends(services)]
"""The services, as a route parameter."""
