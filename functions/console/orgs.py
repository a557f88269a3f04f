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
from state.organization_overview import ORGANIZATION_SORTS
from state.paging import order_of

__all__ = ["router"]

router = APIRouter(prefix="/console/orgs", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Organizations on one page."""


@router.get("")
async def organization_list(
    request: Request,
    session: SessionDep,
    q: Annotated[str, Query(max_length=200)] = "",
    sort: Annotated[str, Query(max_length=40)] = "",
    dir: Annotated[str, Query(max_length=10)] = "",
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> Response:
    """Every organization with its counts, oldest first unless a header sorts them, paged both ways; `q`: name."""
    operator_only(session)
    svc = await services(request)
    page = await organizations_page(
        svc.db, session.caller, name=q, sort=sort or None, direction=dir or None, cursor=cursor or None,
        limit=PAGE_SIZE,
    )  # fmt: skip
    order = order_of(ORGANIZATION_SORTS, sort or None, dir or None, "created")
    query = {"q": q, "sort": sort, "dir": dir}
    return render(request, "orgs.html", orgs=page.items, total=page.total, q=q, page=page, order=order, query=query)
