"""The HTTP routes of the service: the project's API under `/v1/` and the operational routes.

One module per resource (`context`, `knowledge`, `memory`, `orgs`, `operator`, `keys`, `ops`); each holds a
FastAPI router and only parses, calls the core and answers small JSON. `functions.app` mounts `ROUTERS` in
this order. Every `/v1/` route declares its scope (`functions.api._scopes`: operator, organization or any
key), and the app refuses to build when one declares none; an organization-scoped route answers an
unknown organization 404 `organization_not_found` before it runs.
"""

from __future__ import annotations

from functions.api import context, keys, knowledge, memory, operator, ops, orgs

__all__ = ["ROUTERS"]

ROUTERS = (
    ops.router,
    orgs.router,
    keys.router,
    context.router,
    knowledge.router,
    operator.router,
    memory.router,
)
"""The routers of the app, in mounting order."""
