"""`ac-context mcp`: serve the MCP face over stdio, for an agent framework that starts it as a subprocess.

The process opens the configured database (migrated) and the services as every command does, and speaks MCP on
stdin and stdout until the client closes stdin (`functions.mcp.stdio`). It acts as the command line (an
operator: it holds the database's rights) unless given a key, `--key` or better the setting `AC_CONTEXT_MCP_KEY`
(an argument shows in the process list): the operator token or an API key, checked by the API's own code before
the first message is read, so an organization key scopes the process to its organization exactly as over HTTP,
and a bad key is one line with its code (`auth_invalid`, `auth_revoked`) and exit 1. This module imports the
SDK and the core inside the command, so `ac-context --help` loads neither.
"""

from __future__ import annotations

from typing import Annotated

import typer

from functions.cli._common import open_cli_services, run

__all__ = ["mcp", "register"]

KEY_ENV = "AC_CONTEXT_MCP_KEY"
"""The variable holding the key an `ac-context mcp` process acts with."""


def mcp(
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="Act as this key's holder (the operator token, an operator key or an organization key) instead of "
            f"the command line's operator rights; default {KEY_ENV}, better than this option, which shows in the "
            "process list.",
        ),
    ] = None,
) -> None:
    """Serve the MCP tools (briefs, search, memory, sources) over stdio until the client closes stdin."""
    from functions.actions.scope import CLI
    from functions.mcp.stdio import resolve_key, serve_stdio
    from state.settings import get_settings

    settings = get_settings()
    held = key or settings.mcp_key

    async def main() -> None:
        async with open_cli_services() as services:
            caller = CLI if not held else await resolve_key(services, held, api_token=settings.api_token)
            await serve_stdio(services, caller, version=_version())

    run(main)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ac-context")
    except PackageNotFoundError:
        return ""


def register(app: typer.Typer) -> None:
    """Add `mcp` to the CLI."""
    app.command()(mcp)
