"""`/console/orgs`: the operator's organizations, searchable by name (an organization key: 403).

This module must never show an organization key any organization but its own.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from functions._request import services
from functions.actions.orgs import organizations_page
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, operator_only

__all__ = ["router"]

router = APIRouter(prefix="/console/orgs", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Organizations on one page."""


@router.get("")
async def organization_list(
    request: Request,
    session: SessionDep,
    q: Annotated[str, Query(max_length=200)] = "",
    cursor: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    """Every organization with its counts, oldest first, a page at a time; `q` filters by name."""
    operator_only(session)
    svc = await services(request)
    page = await organizations_page(svc.db, session.caller, name=q, cursor=cursor or None, limit=PAGE_SIZE)
    return render(request, "orgs.html", orgs=page.items, total=page.total, q=q, next_cursor=page.next_cursor)
