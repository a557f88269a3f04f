"""The routers of the app, in mounting order: importing this module loads every route module (and FastAPI)."""

from __future__ import annotations

from functions.api import (
    appstate,
    context,
    erasure,
    keys,
    knowledge,
    memory,
    memory_pages,
    memory_transfer,
    operator,
    ops,
    orgs,
    receipts,
    source,
    source_pages,
)

__all__ = ["ROUTERS"]

ROUTERS = (
    ops.router,
    orgs.router,
    appstate.router,
    keys.router,
    context.router,
    knowledge.router,
    source_pages.router,
    source.router,
    operator.router,
    memory.router,
    memory_pages.router,
    memory_transfer.router,
    erasure.router,
    receipts.router,
)
"""The routers of the app, in mounting order."""
