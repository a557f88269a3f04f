"""The HTTP routes of the service: the project's API under `/v1/` and the operational routes.

One module per resource (`context`, `knowledge`, `memory`, `orgs`, `operator`, `keys`, `ops`); each holds a
FastAPI router and only parses, calls the core and answers small JSON. `functions.app` mounts `ROUTERS` in
this order. Every `/v1/` route declares its scope (`functions.api._scopes`: operator, organization or any
key), and the app refuses to build when one declares none; an organization-scoped route answers an
unknown organization 404 `organization_not_found` before it runs.

`ROUTERS` (`functions.api.routers`) is read lazily: importing one route module loads only that module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state.lazy import lazy_exports

if TYPE_CHECKING:
    from functions.api.routers import ROUTERS

__all__ = ["ROUTERS"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
