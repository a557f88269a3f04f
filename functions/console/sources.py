"""`/console/orgs/{organization}/sources…`: the list, a source's page, retry, and delete with its receipt.

Retry and delete are the acts the API routes call (`functions.actions.knowledge.retry` and `delete`) with the
session's caller, so they refuse exactly what the API refuses: a source of another organization or of the
platform answers 404 `source_not_found`, a pending or ready source 409 `source_not_failed`, a deleted one 410
with its receipt id. Delete asks first (a GET page with a POST form), then shows the receipt. Every POST
checks the session's CSRF token.
"""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Form, Query, Request, Response
from fastapi.responses import RedirectResponse

from functions.actions import knowledge
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, organization_of
from functions.console._session import check_csrf
from knowledge.ingestion.source_pages import SOURCE_SORTS
from state.paging import order_of

__all__ = ["PAGE_SIZE", "router"]

router = APIRouter(prefix="/console/orgs/{organization_id}/sources", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Rows on one page of a list (sources, chunks)."""
Status = Literal["", "pending", "ready", "failed"]


@router.get("")
async def source_list(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    status: Annotated[Status, Query()] = "",
    overdue: Annotated[bool, Query()] = False,
    q: Annotated[str, Query(max_length=200)] = "",
    sort: Annotated[str, Query(max_length=40)] = "",
    dir: Annotated[str, Query(max_length=10)] = "",
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> Response:
    """The organization's sources, newest first unless a header sorts them, paged both ways, filtered."""
    svc, org = await organization_of(request, session, organization_id)
    page = await knowledge.sources_page(
        svc.db, session.caller, org.id, status=status or None, overdue=overdue, title=q, sort=sort or None,
        direction=dir or None, cursor=cursor or None, limit=PAGE_SIZE,
    )  # fmt: skip
    order = order_of(SOURCE_SORTS, sort or None, dir or None, "created")
    query = {"status": status, "overdue": "true" if overdue else "", "q": q, "sort": sort, "dir": dir}
    return render(
        request, "sources.html", org=org, page=page, rows=page.items, total=page.total, status=status,
        overdue=overdue, q=q, order=order, query=query,
    )  # fmt: skip


@router.get("/{source_id}")
async def source_page(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    source_id: UUID,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> Response:
    """One source: its metadata, progress and reason per model, attempts, and chunks (paged both ways)."""
    svc, org = await organization_of(request, session, organization_id)
    caller = session.caller
    view = await knowledge.source(svc.db, caller, source_id, organization_id=org.id)
    progress = await knowledge.progress(svc.db, caller, source_id, organization_id=org.id)
    chunks = await knowledge.chunks_page(
        svc.db, caller, source_id, organization_id=org.id, cursor=cursor or None, limit=PAGE_SIZE
    )
    attempts = await knowledge.attempts(svc.db, caller, source_id, organization_id=org.id)
    return render(request, "source.html", org=org, source=view, progress=progress, chunks=chunks, attempts=attempts)


@router.post("/{source_id}/retry")
async def source_retry(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    source_id: UUID,
    csrf: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """Retry a failed source (the API's retry), then show the source again: a GET that reads it fresh.

    The redirect is a new request whose reads see the reset: the source and its attempts are read on the
    primary or on a standby that replayed this write (the console's POST is noted as a write,
    `functions.api._consistency`), so the page says `pending` and lists the retry at once.
    """
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    await knowledge.retry(
        svc, session.caller, source_id, organization_id=org.id, deliver=request.app.state.outbox.deliver
    )
    return RedirectResponse(f"/console/orgs/{org.id}/sources/{source_id}?retried=1", status_code=303)


@router.get("/{source_id}/delete")
async def source_delete_page(request: Request, session: SessionDep, organization_id: UUID, source_id: UUID) -> Response:
    """Ask before deleting."""
    svc, org = await organization_of(request, session, organization_id)
    view = await knowledge.source(svc.db, session.caller, source_id, organization_id=org.id)
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
    await knowledge.source(svc.db, session.caller, source_id, organization_id=org.id)  # the URL names its organization
    receipt = await knowledge.delete(svc, session.caller, source_id, organization_id=org.id)
    return RedirectResponse(f"/console/orgs/{org.id}/receipts/{receipt.id}", status_code=303)
