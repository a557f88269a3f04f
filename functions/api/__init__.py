"""The HTTP routes of the service: the project's API under `/v1/` and the operational routes.

One module per resource (`context`, `knowledge`, `memory`, `ops`); each holds a FastAPI router and
only parses, calls the core and answers small JSON. `functions.app` mounts `ROUTERS` in this order.
"""

from __future__ import annotations

from functions.api import context, knowledge, memory, ops

__all__ = ["ROUTERS"]

ROUTERS = (ops.router, context.router, knowledge.router, memory.router)
