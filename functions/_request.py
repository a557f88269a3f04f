"""The open services of the app a web request reached: what the API's routes and the console's pages read.

This module must never hold a business rule: it hands the services out, or says why it cannot.
"""

from __future__ import annotations

from fastapi import Request

from functions._services import Services, ServiceSlot

__all__ = ["services"]


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
