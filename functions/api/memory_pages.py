"""`GET /v1/memory/memories` and `…/memories/{id}/chain`: an organization's memory, read by people.

The list pages by cursor, newest first, through live memories only (not forgotten, not superseded, not
expired): every live memory of the organization, both scopes, or with `user_id` that person's user-scope
memories alone; `definition_id` narrows to one agent. The chain answers every revision of the chain a
memory belongs to, oldest first, its tombstones and expiry included; a memory of another organization
answers 404 `memory_not_found`, as an unknown id. Both read `memory.pages`. This module must never write
memory: the agents write it through the tools (`functions.api.memory`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict

from functions.actions import memory as memory_actions
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._pages import (
    CURSOR_ERRORS,
    SORT_ERRORS,
    CursorQuery,
    DirQuery,
    PageOut,
    limit_query,
    page_body,
    sort_query,
)
from functions.api._scopes import OrganizationCaller
from memory.pages import MEMORY_SORTS
from state.ids import CanonicalUuid, OrganizationId

__all__ = ["MemoryChainOut", "MemoryPage", "MemoryRowOut", "RevisionOut", "router"]

router = APIRouter(prefix="/v1/memory", tags=["memory"], responses=ERROR_RESPONSES, route_class=BodyRoute)

_OUT = ConfigDict(extra="forbid", use_attribute_docstrings=True)
_ORG_404 = "`organization_not_found`: the organization the request names does not exist."


class MemoryRowOut(BaseModel):
    """One live memory."""

    model_config = _OUT

    id: str
    """The live revision's id (what `memory.forget` names)."""
    definition_id: str
    """The agent definition that owns it."""
    scope: str
    """`user` or `organization`."""
    user_id: str | None
    """The person of a user memory; null for organization scope."""
    subject_key: str
    """What it is about, with its attribute."""
    attribute: str
    """Its attribute, e.g. `observation.buying_process`."""
    text: str
    """The memory."""
    subject_refs: list[dict[str, Any]]
    """The rows it is about."""
    supersedes_id: str | None
    """The revision it replaced; null for a chain's first."""
    created_at: str
    """When this revision was written (ISO 8601)."""
    expires_at: str | None
    """When it expires (ISO 8601); null: kept until superseded or forgotten."""


class MemoryPage(PageOut):
    """A page of live memories, newest first."""

    items: list[MemoryRowOut]
    """At most `limit` memories."""


class RevisionOut(BaseModel):
    """One revision of a chain."""

    model_config = _OUT

    id: str
    """The revision's id."""
    text: str | None
    """What it said; null for a tombstone."""
    tombstone: bool
    """True for the revision `memory.forget` appended."""
    live: bool
    """True for the chain's live revision (not forgotten, superseded or expired)."""
    supersedes_id: str | None
    """The revision it follows; null for the first."""
    proposed_by_run_id: str | None
    """The run that wrote it."""
    subject_refs: list[dict[str, Any]]
    """The rows it is about."""
    created_at: str
    """When it was written (ISO 8601)."""
    forgotten_at: str | None
    """When it forgot the chain (a tombstone), or null."""
    expires_at: str | None
    """When it expires or expired (ISO 8601), or null."""


class MemoryChainOut(BaseModel):
    """A chain's whole history, oldest revision first."""

    model_config = _OUT

    organization_id: str
    """The tenancy."""
    definition_id: str
    """The agent definition that owns the chain."""
    scope: str
    """`user` or `organization`."""
    user_id: str | None
    """The person of a user chain."""
    subject_key: str
    """What the chain is about."""
    attribute: str
    """Its attribute."""
    live_id: str | None
    """The live revision; null when the chain is forgotten or expired."""
    forgotten: bool
    """True when its last revision is a tombstone."""
    revisions: list[RevisionOut]
    """Every revision, tombstones and expired ones included."""


@router.get(
    "/memories",
    response_model=MemoryPage,
    responses=route_errors(
        {404: _ORG_404, 422: f"{CURSOR_ERRORS} {SORT_ERRORS} `invalid_filter`: subject not kind:id."}
    ),
)
async def list_memories(
    svc: ServicesDep,
    caller: OrganizationCaller,
    organization_id: Annotated[OrganizationId, Query(description="The organization (a key's own).")],
    user_id: Annotated[
        CanonicalUuid | None, Query(description="Only this person's user-scope memories; omit it for every one.")
    ] = None,
    definition_id: Annotated[CanonicalUuid | None, Query(description="Only this agent definition's.")] = None,
    person: Annotated[
        str | None,
        Query(
            max_length=200,
            description="Only the user-scope memories of the organization's people whose email "
            "or name contains this text (any case).",
        ),
    ] = None,
    subject: Annotated[
        str | None, Query(max_length=200, description="Only memories about this subject ref, `kind:id`.")
    ] = None,
    sort: Annotated[str | None, sort_query(sorted(MEMORY_SORTS), "written")] = None,
    dir: DirQuery = None,
    cursor: CursorQuery = None,
    limit: Annotated[int, limit_query("memories")] = 100,
) -> dict[str, Any]:
    """A page of live memories (newest first unless sorted): the organization's, or people's, or a subject's."""
    page = await memory_actions.memories_page(
        svc.db, caller, organization_id, user_id=user_id, definition_id=definition_id, person=person,
        subject=subject, sort=sort, direction=dir, cursor=cursor, limit=limit,
    )  # fmt: skip
    return page_body(page, [m.as_json() for m in page.items])


@router.get(
    "/memories/{memory_id}/chain",
    response_model=MemoryChainOut,
    responses=route_errors({404: f"`memory_not_found`: no such memory in this organization. Or {_ORG_404}"}),
)
async def get_chain(
    svc: ServicesDep,
    caller: OrganizationCaller,
    memory_id: Annotated[CanonicalUuid, Path(description="Any revision of the chain.")],
    organization_id: Annotated[OrganizationId, Query(description="The organization (a key's own).")],
) -> dict[str, Any]:
    """Every revision of a memory's chain, oldest first, with its tombstones and expiry."""
    return (await memory_actions.chain(svc.db, caller, organization_id, memory_id)).as_json()
