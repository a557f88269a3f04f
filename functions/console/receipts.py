"""`/console/orgs/{organization}/receipts…` and `/erase`: the data that leaves, and erasure behind a typed name.

Lists receipts a page at a time (`functions.actions.receipts.receipts_page`, the organization's own) and shows one
through the act the API's receipt route calls (`functions.actions.receipts.show_receipt`), so another
organization's receipt is 404 `receipt_not_found`. Erasing a person or the whole organization calls the
erasure acts (`functions.actions.erasure`) with the session's caller (an organization key may erase a person of its
own organization; only an operator erases an organization). Both ask the user to type the organization's
name first (422 `confirmation_mismatch` otherwise, nothing erased). A repeated organization erasure shows
the receipt of the first, as the API answers it.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Form, Query, Request, Response
from fastapi.responses import RedirectResponse

from functions.actions import erasure
from functions.actions.receipts import receipts_page, show_receipt
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import ConsoleOrg, SessionDep, operator_only, organization_of
from functions.console._session import check_csrf
from functions.errors import ApiError
from state.paging import order_of
from state.receipts import RECEIPT_SORTS

__all__ = ["router"]

router = APIRouter(prefix="/console/orgs/{organization_id}", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Receipts on one page."""


@router.get("/receipts")
async def receipt_list(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    sort: Annotated[str, Query(max_length=40)] = "",
    dir: Annotated[str, Query(max_length=10)] = "",
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> Response:
    """The organization's receipts, newest first unless the Started header sorts them, paged both ways."""
    svc, org = await organization_of(request, session, organization_id, erased=True)
    page = await receipts_page(
        svc.db, session.caller, organization_id=org.id, sort=sort or None, direction=dir or None,
        cursor=cursor or None, limit=PAGE_SIZE,
    )  # fmt: skip
    order = order_of(RECEIPT_SORTS, sort or None, dir or None, "started")
    query = {"sort": sort, "dir": dir}
    return render(request, "receipts.html", org=org, page=page, order=order, query=query)


@router.get("/receipts/{receipt_id}")
async def receipt_page(request: Request, session: SessionDep, organization_id: UUID, receipt_id: UUID) -> Response:
    """One receipt: what left, when, asked by whom (never any content)."""
    svc, org = await organization_of(request, session, organization_id, erased=True)
    receipt = (await show_receipt(svc, session.caller, receipt_id, organization_id=org.id)).as_json()
    return render(request, "receipt.html", org=org, receipt=receipt)


def _confirmed(org: ConsoleOrg, typed: str) -> None:
    if org.erased or typed.strip() != org.name:
        raise ApiError(422, "confirmation_mismatch", "type the organization's name exactly to confirm; nothing erased")


@router.post("/erase/person")
async def erase_person(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    user_id: Annotated[UUID, Form()],
    confirm: Annotated[str, Form(max_length=300)] = "",
    subject: Annotated[str, Form(max_length=300)] = "",
    csrf: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """Erase one person's memories (the API's erasure), then show the receipt."""
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    _confirmed(org, confirm)
    receipt = await erasure.erase_person(svc.db, session.caller, org.id, user_id, subject=subject.strip() or None)
    return RedirectResponse(f"/console/orgs/{org.id}/receipts/{receipt.id}", status_code=303)


@router.post("/erase/organization")
async def erase_organization(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    confirm: Annotated[str, Form(max_length=300)] = "",
    csrf: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """Erase the organization (operator only; the API's erasure); a repeat shows the first receipt."""
    check_csrf(session, csrf)
    operator_only(session)
    svc, org = await organization_of(request, session, organization_id, erased=True)
    if not org.erased:
        _confirmed(org, confirm)
    receipt = await erasure.erase_organization(svc.db, svc.object_store, session.caller, org.id)
    return RedirectResponse(f"/console/orgs/{org.id}/receipts/{receipt.id}", status_code=303)
