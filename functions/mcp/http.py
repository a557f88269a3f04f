"""`/mcp`: the MCP face over streamable HTTP, in the service's own app, authenticated exactly as `/v1/` is.

Every request's `Authorization: Bearer …` (the operator token, an operator key or an organization key) is
resolved by `functions.actions.auth.authenticate`, the check the API's edge and the console's sign-in run,
before the SDK sees a byte: a refusal is the API's envelope (401 `auth_missing`, `auth_invalid`,
`auth_revoked` with `WWW-Authenticate`; 503 with `Retry-After`). The caller is left in the request scope,
where the tools read it; the services are the app's open ones (`database_unavailable` in a tool result while
the database is away). The edge
(`functions.api._edge.EdgeGuard`) still applies its JSON body limit and depth check to `/mcp`.

The SDK's session manager runs stateless with JSON responses: every POST is answered on its own, with no
session to keep, so any worker of a several-worker service answers any request, and no SSE stream holds a
connection open. `McpEndpoint.running()` runs the manager; the app's lifespan enters it (a fresh manager per
lifespan, as the SDK runs one only once); the SDK is imported there, so importing the app does not load it.
This module must never log or measure a bearer value.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from functions._request import services_of
from functions._services import Services
from functions.actions import auth
from functions.actions.scope import Caller
from functions.errors import ApiError

if TYPE_CHECKING:
    from mcp.server import ServerRequestContext
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["MCP_PATH", "McpEndpoint"]

MCP_PATH = "/mcp"
"""Where the MCP face is served."""
CALLER = "ac_context.mcp_caller"
"""The request-scope key under which the endpoint leaves the authenticated `Caller` for the tools."""


def _envelope(refusal: ApiError) -> JSONResponse:
    """The API's error envelope, with `WWW-Authenticate` on a 401 and `Retry-After` on a 503, as `/v1/` answers."""
    status = refusal.status
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {"Retry-After": "2"} if status == 503 else None
    body = {"error": {"code": refusal.code, "message": str(refusal), "details": refusal.details}}
    return JSONResponse(body, status_code=status, headers=headers)


async def _authenticate(app: Any, header: str | None) -> Caller:
    """The caller a request's `Authorization` header names: the check `/v1/`'s edge and the console run."""
    health = getattr(app.state, "health", None)
    return await auth.authenticate(
        header,
        api_token=app.state.api_token,
        services=lambda: services_of(app),
        mark_down=None if health is None else health.mark_down,
    )


async def _backend(ctx: ServerRequestContext[Any, Any]) -> tuple[Services, Caller]:
    request = ctx.request
    if not isinstance(request, Request) or not isinstance(request.scope.get(CALLER), Caller):
        raise ApiError(401, "auth_missing", "send 'Authorization: Bearer <key>'")  # never reached unauthenticated
    return await services_of(request.scope["app"]), request.scope[CALLER]


class McpEndpoint:
    """The ASGI app of `/mcp`: authenticate, then hand the request to the running session manager."""

    def __init__(self, *, max_body_bytes: int, version: str = "") -> None:
        self.max_body_bytes = max_body_bytes
        self.version = version
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run a session manager for the app's lifetime (the app's lifespan enters this).

        The manager holds an anyio task group, which must be left in the task that entered it; a lifespan may be
        entered and left in two tasks (a test fixture's setup and teardown), so the manager runs in a task of its
        own, from start to stop.
        """
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager  # the SDK loads at start only

        from functions.mcp.server import build_server

        manager = StreamableHTTPSessionManager(
            app=build_server(_backend, version=self.version),
            json_response=True,
            stateless=True,
            max_request_body_size=self.max_body_bytes,
        )
        started, stop = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            async with manager.run():
                self._manager = manager
                started.set()
                try:
                    await stop.wait()
                finally:
                    self._manager = None

        task = asyncio.create_task(hold(), name="ac-context-mcp-sessions")
        waiting = asyncio.ensure_future(started.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiting.cancel()
            task.result()  # the manager failed to start: say why
        try:
            yield
        finally:
            stop.set()
            await task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one request to `/mcp`."""
        try:
            caller = await _authenticate(scope["app"], Headers(scope=scope).get("authorization"))
            if self._manager is None:
                raise ApiError(503, "service_not_ready", "the MCP endpoint is not running yet")
        except ApiError as refusal:
            await _envelope(refusal)(scope, receive, send)
            return
        scope[CALLER] = caller
        await self._manager.handle_request(scope, receive, send)
