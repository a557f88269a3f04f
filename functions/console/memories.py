"""`/console/orgs/{organization}/memories…`: live memories and a chain's history, their export and an import.

The list is `functions.actions.memory.memories_page` (the organization's live memories of both scopes, or one
person's, newest first, a page at a time); a chain's page is `functions.actions.memory.chain` (every revision,
tombstones and expiry included), which answers 404 `memory_not_found` for a memory of another
organization. Nothing here remembers or forgets: memory is written by agents through the tools. `…/export`
downloads the organization's (or the person's) chains as JSONL and the import form (`…/import`, multipart,
with the session's CSRF token) rebuilds an export's chains here and shows the import's receipt; both call the
acts the API calls (`functions.actions.memory_transfer`), with the session's caller, so an organization key's
session moves its own organization's memory only. A refused file is a page with its code and line.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile
from fastapi.responses import RedirectResponse, StreamingResponse

from functions.actions.memory import chain as memory_chain
from functions.actions.memory import memories_page
from functions.actions.memory_transfer import export_memories, import_file
from functions.console._chain_diff import chain_steps
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, optional_uuid, organization_of
from functions.console._session import check_csrf
from memory.pages import MEMORY_SORTS
from memory.transfer import EXPORT_MEDIA_TYPE, MAX_IMPORT_BYTES, ImportTooLargeError
from state.paging import order_of

__all__ = ["router"]

router = APIRouter(prefix="/console/orgs/{organization_id}/memories", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Memories on one page."""


@router.get("")
async def memory_list(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    person: Annotated[str, Query(max_length=200)] = "",
    subject: Annotated[str, Query(max_length=200)] = "",
    sort: Annotated[str, Query(max_length=40)] = "",
    dir: Annotated[str, Query(max_length=10)] = "",
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> Response:
    """The live memories of the organization, or of people, or about a subject, sorted, paged both ways.

    `person` is a user id (the people page's links) or text of a name or email; `subject` is `kind:id`.
    """
    svc, org = await organization_of(request, session, organization_id)
    user_id = _user_id(person)
    page = await memories_page(
        svc.db, session.caller, org.id, user_id=user_id, person=None if user_id else person, subject=subject,
        sort=sort or None, direction=dir or None, cursor=cursor or None, limit=PAGE_SIZE,
    )  # fmt: skip
    order = order_of(MEMORY_SORTS, sort or None, dir or None, "written")
    query = {"person": person.strip(), "subject": subject.strip(), "sort": sort, "dir": dir}
    return render(request, "memories.html", org=org, page=page, person=person, subject=subject, order=order,
                  query=query)  # fmt: skip


def _user_id(person: str) -> UUID | None:
    """A person filter that is a user id (the links the people page makes), or None: text of a name or email."""
    try:
        return UUID(person.strip())
    except ValueError:
        return None


@router.get("/export")
async def memory_export(
    request: Request, session: SessionDep, organization_id: UUID, person: Annotated[str, Query(max_length=40)] = ""
) -> Response:
    """Download every revision of the organization's (or the person's) chains as JSONL."""
    svc, org = await organization_of(request, session, organization_id)
    user_id = optional_uuid(person, "person")
    lines = await export_memories(svc.db, session.caller, org.id, user_id=user_id)
    name = f"memory-{org.id}{'' if user_id is None else f'-{user_id}'}.jsonl"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return StreamingResponse(lines, media_type=EXPORT_MEDIA_TYPE, headers=headers)


@router.post("/import")
async def memory_import(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    file: Annotated[UploadFile, File()],
    csrf: Annotated[str, Form(max_length=100)] = "",
    definition_id: Annotated[str, Form(max_length=40)] = "",
    user_id: Annotated[str, Form(max_length=40)] = "",
) -> Response:
    """Import an export into the organization, then show the import's receipt."""
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    data = await file.read(MAX_IMPORT_BYTES + 1)
    if len(data) > MAX_IMPORT_BYTES:
        raise ImportTooLargeError(f"the file is larger than the {MAX_IMPORT_BYTES}-byte limit")
    receipt = await import_file(
        svc, session.caller, org.id, data,
        definition_id=optional_uuid(definition_id, "definition_id"), user_id=optional_uuid(user_id, "user_id"),
    )  # fmt: skip
    return RedirectResponse(f"/console/orgs/{org.id}/receipts/{receipt.id}", status_code=303)


@router.get("/{memory_id}")
async def memory_page(request: Request, session: SessionDep, organization_id: UUID, memory_id: UUID) -> Response:
    """A chain's every revision, oldest first (which one is live, tombstones, expiry), and what each changed."""
    svc, org = await organization_of(request, session, organization_id)
    chain = await memory_chain(svc.db, session.caller, org.id, memory_id)
    return render(request, "memory.html", org=org, chain=chain, steps=chain_steps(chain))
