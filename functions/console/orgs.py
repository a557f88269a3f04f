"""`/console/orgs`: the operator's organizations, searchable by name (an organization key: 403).

This module must never show an organization key any organization but its own.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from functions.api._deps import services
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, operator_only
from state.organizations import count_organizations, list_organizations

__all__ = ["router"]

router = APIRouter(prefix="/console/orgs", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Organizations on one page."""


@router.get("")
async def organization_list(
    request: Request, session: SessionDep, q: Annotated[str, Query(max_length=200)] = ""
) -> Response:
    """Every organization with its counts, newest first; `q` filters by name."""
    operator_only(session)
    svc = await services(request)
    orgs = await list_organizations(svc.db, limit=PAGE_SIZE)
    if q.strip():
        orgs = [o for o in orgs if q.strip().lower() in o.name.lower()]
    total = await count_organizations(svc.db)
    return render(request, "orgs.html", orgs=orgs, rows=[], total=total, q=q, next_cursor=None)
