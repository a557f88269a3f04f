"""Strict-Transport-Security on every answer of the service in production.

In production the service is reached over HTTPS (its cookies are Secure; `docs/operations.md`), so every
answer tells the browser to use nothing else for this host for a year: console pages, `/docs`, `/v1/`,
refusals of the edge and health checks alike. HSTS binds the whole host, so whichever page a browser opens
first pins the rest. `includeSubDomains` and `preload` are left out: the service does not know which other
hosts live under its name. In development (an Inngest client in dev mode) nothing is sent, so a plain
`http://localhost` stays usable. This module must never answer a request itself.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HSTS", "StrictTransport"]

HSTS = "max-age=31536000"
"""The Strict-Transport-Security value of every production answer: HTTPS only, for a year."""


class StrictTransport:
    """ASGI middleware: `Strict-Transport-Security` on every HTTP answer while the app runs in production."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not getattr(scope["app"].state.inngest, "is_production", False):
            await self.app(scope, receive, send)
            return

        async def send_with_hsts(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["strict-transport-security"] = HSTS
            await send(message)

        await self.app(scope, receive, send_with_hsts)
