"""The MCP face over stdio, for `ac-context mcp`: one client, one process, JSON-RPC lines on stdin and stdout.

The command opens the services as every command does and hands them here with the caller it resolved: the
command line itself (`functions.actions.scope.CLI`, an operator: it holds the database's rights), or the holder
of a key it was given (`resolve_key`, the API's own check: an organization key then scopes the process to its
organization exactly as over HTTP). While serving, the SDK points fd 1 at stderr, so no stray print reaches the
wire. This module must never decide a scope: the action layer does.
"""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server

from functions._services import Services
from functions.actions import auth
from functions.actions.scope import Caller
from functions.mcp.server import build_server

__all__ = ["resolve_key", "serve_stdio"]


async def resolve_key(services: Services, key: str, *, api_token: str | None) -> Caller:
    """The caller `key` names (the operator token or an API key), or the `ApiError` refusing it."""

    async def opened() -> Services:
        return services

    return await auth.authenticate(f"Bearer {key}", api_token=api_token, services=opened)


async def serve_stdio(services: Services, caller: Caller, *, version: str = "") -> None:
    """Serve MCP on this process's stdin and stdout until the client closes stdin."""

    async def backend(_: ServerRequestContext[Any, Any]) -> tuple[Services, Caller]:
        return services, caller

    server = build_server(backend, version=version)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
