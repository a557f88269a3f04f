"""`/console/orgs/{organization}/sources…`: the list, a source's page, retry, and delete with its receipt.

Retry and delete call the API routes' own functions (`functions.api.knowledge.retry` and
`delete_knowledge_source`) with the session's caller, so they refuse exactly what the API refuses: a
source of another organization or of the platform answers 404 `source_not_found`, a ready source 409
`source_not_failed`, a deleted one 410 with its receipt id. Delete asks first (a GET page with a POST
form), then shows the receipt. Every POST checks the session's CSRF token.
"""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Form, Query, Request, Response
from fastapi.responses import RedirectResponse

from functions.api.knowledge import delete_knowledge_source, retry
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, organization_of
from functions.console._session import check_csrf
from knowledge.db_errors import SourceNotFoundError
from knowledge.ingestion.sources import SourceView, count_sources, get_source, list_sources, model_readiness
from state.db import Database

__all__ = ["PAGE_SIZE", "router"]

router = APIRouter(prefix="/console/orgs/{organization_id}/sources", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Rows on one page of a list."""
Status = Literal["", "pending", "ready", "failed"]


async def _own_source(db: Database, source_id: UUID, organization_id: UUID) -> SourceView:
    """The source, or 404 `source_not_found` when it belongs to another scope (as the API answers)."""
    view = await get_source(db, source_id)
    if view.organization_id != organization_id:
        raise SourceNotFoundError(f"no knowledge source {source_id} in this scope")
    return view


@router.get("")
async def source_list(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    status: Annotated[Status, Query()] = "",
    overdue: Annotated[bool, Query()] = False,
) -> Response:
    """The organization's sources, newest first, with the filters."""
    svc, org = await organization_of(request, session, organization_id)
    wanted = status or None
    views = await list_sources(svc.db, org.id, limit=PAGE_SIZE, overdue=overdue, status=wanted)
    total = await count_sources(svc.db, org.id, overdue=overdue, status=wanted)
    return render(
        request, "sources.html", org=org, sources=views, total=total, status=status, overdue=overdue,
        q="", next_cursor=None,
    )  # fmt: skip


@router.get("/{source_id}")
async def source_page(request: Request, session: SessionDep, organization_id: UUID, source_id: UUID) -> Response:
    """One source: metadata, its readiness and reason per model."""
    svc, org = await organization_of(request, session, organization_id)
    view = await _own_source(svc.db, source_id, org.id)
    models = await model_readiness(svc.db, [source_id])
    return render(request, "source.html", org=org, source=view, models=models, chunks=None, done=None)


@router.post("/{source_id}/retry")
async def source_retry(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    source_id: UUID,
    csrf: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """Retry a failed source (the API's retry), then show the source again."""
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    await retry(request, svc, source_id, organization_id=org.id, platform=False)
    return RedirectResponse(f"/console/orgs/{org.id}/sources/{source_id}?retried=1", status_code=303)


@router.get("/{source_id}/delete")
async def source_delete_page(request: Request, session: SessionDep, organization_id: UUID, source_id: UUID) -> Response:
    """Ask before deleting."""
    svc, org = await organization_of(request, session, organization_id)
    view = await _own_source(svc.db, source_id, org.id)
    return render(request, "source_delete.html", org=org, source=view)


@router.post("/{source_id}/delete")
async def source_delete(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    source_id: UUID,
    csrf: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """Delete the source (the API's delete) and show its receipt."""
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    await _own_source(svc.db, source_id, org.id)  # an operator's URL names the source's own organization
    receipt = await delete_knowledge_source(svc, session.caller, source_id, organization_id=org.id)
    return RedirectResponse(f"/console/orgs/{org.id}/receipts/{receipt['id']}", status_code=303)
