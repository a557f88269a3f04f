"""The open services of the app a web request reached: what the API's routes and the console's pages read.

This module must never hold a business rule: it hands the services out, or says why it cannot.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from functions._services import Services, ServiceSlot

__all__ = ["services", "services_of"]


async def services_of(app: Any) -> Services:
    """The open services of `app`, or the error that says why not (503 `database_unavailable` over HTTP).

    That answer comes while the database cannot be reached: at start, or since a request lost its
    connection and no probe has succeeded since.
    """
    slot: ServiceSlot = app.state.slot
    opened = slot.get()
    health = getattr(app.state, "health", None)
    if health is not None:
        await health.gate()
    return opened


async def services(request: Request) -> Services:
    """The open services of the app `request` reached (see `services_of`)."""
    return await services_of(request.app)
