"""Mount the console on the service: its pages, its stylesheet at `/console/static`, its headers."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from functions.console import (
    briefs,
    citations,
    health,
    keys,
    memories,
    orgs,
    people,
    receipts,
    search,
    signin,
    sources,
)
from functions.console._pages import STATIC_DIR, ConsoleHeaders

__all__ = ["CONSOLE_PATH", "install_console"]

CONSOLE_PATH = "/console"
"""Where the console is served."""


def install_console(app: FastAPI) -> None:
    """Add the console's routes, its static files and its security headers to `app`."""
    app.mount(f"{CONSOLE_PATH}/static", StaticFiles(directory=STATIC_DIR), name="console-static")
    for module in (signin, orgs, sources, search, briefs, citations, memories, people, receipts, health, keys):
        app.include_router(module.router)
    app.add_middleware(ConsoleHeaders)
