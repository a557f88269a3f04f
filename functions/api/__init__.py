"""The HTTP routes of the service: the project's API under `/v1/` and the operational routes.

One module per resource (`context`, `knowledge`, `memory`, `orgs`, `operator`, `ops`); each holds a
FastAPI router and only parses, calls the core and answers small JSON. `functions.app` mounts `ROUTERS` in
this order. Every organization-scoped router is mounted behind `organization_must_exist`, so an unknown
organization answers 404 `organization_not_found` on every one of its routes.
"""

from __future__ import annotations

from fastapi import APIRouter

from functions.api import context, knowledge, memory, operator, ops, orgs
from functions.api._deps import OrganizationChecked

__all__ = ["ORGANIZATION_SCOPED", "ROUTERS"]


def _organization_checked(router: APIRouter) -> APIRouter:
    """`router`'s routes, each behind the organization check (after its own token check)."""
    checked = APIRouter(dependencies=[OrganizationChecked])
    checked.include_router(router)
    return checked


ORGANIZATION_SCOPED = (context.router, knowledge.router, operator.router, memory.router)
"""The routers whose routes take an organization."""

ROUTERS = (ops.router, orgs.router, *(_organization_checked(r) for r in ORGANIZATION_SCOPED))
