"""`/v1/organizations`: create and list organizations, for running the layer on its own.

The platform owns `public.organizations`; a standalone deployment needs a way to make the tenant every
other route is scoped to. Creating and listing are operator-scoped; an organization key may show only its
own organization. Creation is rate-limited (`AC_CONTEXT_ORGANIZATIONS_PER_MINUTE` across every replica):
past it, 429 `rate_limited` with `Retry-After`. An unknown organization answers 404
`organization_not_found` here and on every organization-scoped route; an id that is not canonical UUID text
(`urn:uuid:`, braces, upper case, no hyphens) answers 422 `invalid_request` naming `path.organization_id`.
This module must never delete or
rename an organization.

`GET /v1/organizations` pages by cursor (`functions.api._pages`): oldest first, `name` finds the ones whose
name contains a text (any case), and each row carries the operator's overview counts (sources by status,
overdue sources, chunks, live memories, last ingestion; `state.organization_overview`).
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from functions._wire import CleanText
from functions.actions import orgs
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
from functions.api._scopes import OperatorCaller, OrganizationCaller
from state.ids import OrganizationId
from state.organization_overview import ORGANIZATION_SORTS
from state.organizations import (
    MAX_ORGANIZATION_NAME,
    Organization,
)

__all__ = ["OrganizationIn", "OrganizationList", "OrganizationOut", "OrganizationOverviewOut", "router"]

router = APIRouter(prefix="/v1/organizations", tags=["organizations"], responses=ERROR_RESPONSES, route_class=BodyRoute)


class OrganizationIn(BaseModel):
    """A new organization."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: CleanText = Field(min_length=1, max_length=MAX_ORGANIZATION_NAME, pattern=r"\S")
    """Its display name."""


class OrganizationOut(BaseModel):
    """An organization."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: UUID
    """Its id, the `organization_id` every other route names."""
    name: str
    """Its display name."""
    created_at: str
    """When it was created (ISO 8601)."""


class OrganizationOverviewOut(OrganizationOut):
    """An organization with what it holds."""

    sources_by_status: dict[str, int]
    """Its knowledge sources per status (`pending`, `ready`, `failed`, `deleting`); a status with none is absent."""
    overdue_sources: int
    """Sources whose review date is before today (UTC)."""
    chunks: int
    """Chunks search can serve: its ready sources' chunks under its live model."""
    memories: int
    """Its live memories (both scopes)."""
    last_ingested_at: str | None
    """When one of its sources last became ready (ISO 8601), or null."""


class OrganizationList(PageOut):
    """A page of organizations, oldest first."""

    items: list[OrganizationOverviewOut]
    """At most `limit` organizations, each with its counts."""
    organizations: list[OrganizationOverviewOut]
    """The same rows as `items` (the key this list answered before it paged), for older callers."""


def _out(org: Organization) -> dict[str, Any]:
    return {"id": str(org.id), "name": org.name, "created_at": org.created_at.isoformat()}


@router.post(
    "",
    status_code=201,
    response_model=OrganizationOut,
    responses=route_errors({400: None, 429: "`rate_limited`: past `AC_CONTEXT_ORGANIZATIONS_PER_MINUTE`."}),
)
async def create(body: OrganizationIn, svc: ServicesDep, caller: OperatorCaller) -> dict[str, Any]:
    """Create an organization and answer its id (429 `rate_limited` past the per-minute limit)."""
    return _out(await orgs.create(svc.db, caller, body.name, per_minute=svc.settings.organizations_per_minute))


@router.get("", response_model=OrganizationList, responses=route_errors({422: f"{CURSOR_ERRORS} {SORT_ERRORS}"}))
async def list_all(
    svc: ServicesDep,
    caller: OperatorCaller,
    name: Annotated[
        str | None, Query(max_length=MAX_ORGANIZATION_NAME, description="Only those whose name contains this text.")
    ] = None,
    sort: Annotated[str | None, sort_query(sorted(ORGANIZATION_SORTS), "created")] = None,
    dir: DirQuery = None,
    cursor: CursorQuery = None,
    limit: Annotated[int, limit_query("organizations")] = 100,
) -> dict[str, Any]:
    """A page of organizations, oldest first unless sorted, each with its counts; `total` counts every match."""
    page = await orgs.organizations_page(
        svc.db, caller, name=name, sort=sort, direction=dir, cursor=cursor, limit=limit
    )
    return page_body(page, [o.as_json() for o in page.items], legacy="organizations")


@router.get(
    "/{organization_id}",
    response_model=OrganizationOut,
    responses=route_errors({404: "`organization_not_found`: no organization has this id."}),
)
async def show(
    organization_id: Annotated[OrganizationId, Path(description="The organization's id.")],
    svc: ServicesDep,
    caller: OrganizationCaller,
) -> dict[str, Any]:
    """One organization, or 404 `organization_not_found`."""
    return _out(await orgs.organization(svc.db, caller, organization_id))
