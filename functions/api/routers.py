"""The routers of the app, in mounting order: importing this module loads every route module (and FastAPI)."""

from __future__ import annotations

from functions.api import context, erasure, keys, knowledge, memory, operator, ops, orgs, receipts

__all__ = ["ROUTERS"]

ROUTERS = (
    ops.router,
    orgs.router,
    keys.router,
    context.router,
    knowledge.router,
    operator.router,
    memory.router,
    erasure.router,
    receipts.router,
)
"""The routers of the app, in mounting order."""
