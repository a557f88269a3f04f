"""`/console/orgs/{organization}/memories…`: live memories and a chain's history, read only.

The list is `functions.actions.memory.memories_page` (the organization's live memories of both scopes, or one
person's, newest first, a page at a time); a chain's page is `functions.actions.memory.chain` (every revision,
tombstones and expiry included), which answers 404 `memory_not_found` for a memory of another
organization. Nothing here remembers or forgets: memory is written by agents through the tools.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response

from functions.actions.memory import chain as memory_chain
from functions.actions.memory import memories_page
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, optional_uuid, organization_of

__all__ = ["router"]

router = APIRouter(prefix="/console/orgs/{organization_id}/memories", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Memories on one page."""


@router.get("")
async def memory_list(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    person: Annotated[str, Query(max_length=40)] = "",
    cursor: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    """The live memories of the organization, or of one person."""
    svc, org = await organization_of(request, session, organization_id)
    user_id = optional_uuid(person, "person")
    page = await memories_page(svc.db, session.caller, org.id, user_id=user_id, cursor=cursor or None, limit=PAGE_SIZE)
    return render(request, "memories.html", org=org, page=page, person=person)


@router.get("/{memory_id}")
async def memory_page(request: Request, session: SessionDep, organization_id: UUID, memory_id: UUID) -> Response:
    """A chain's every revision, oldest first: which one is live, tombstones, expiry."""
    svc, org = await organization_of(request, session, organization_id)
    chain = await memory_chain(svc.db, session.caller, org.id, memory_id)
    return render(request, "memory.html", org=org, chain=chain)
