"""`/v1/organizations`: create and list organizations, for running the layer on its own.

The platform owns `public.organizations`; a standalone deployment needs a way to make the tenant every
other route is scoped to. Creating and listing are operator-scoped; an organization key may show only its
own organization. Creation is rate-limited (`AC_CONTEXT_ORGANIZATIONS_PER_MINUTE` across every replica):
past it, 429 `rate_limited` with `Retry-After`. An unknown organization answers 404
`organization_not_found` here and on every organization-scoped route; an id that is not canonical UUID text
(`urn:uuid:`, braces, upper case, no hyphens) answers 422 `invalid_request` naming `path.organization_id`.
This module must never delete or
rename an organization.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from functions._wire import CleanText
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._scopes import OPERATOR, ORGANIZATION
from state.ids import OrganizationId
from state.organizations import (
    MAX_ORGANIZATION_NAME,
    Organization,
    create_organization,
    get_organization,
    list_organizations,
)

__all__ = ["OrganizationIn", "OrganizationList", "OrganizationOut", "router"]

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


class OrganizationList(BaseModel):
    """Organizations, oldest first."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    organizations: list[OrganizationOut]
    """At most `limit` organizations."""


def _out(org: Organization) -> dict[str, Any]:
    return {"id": str(org.id), "name": org.name, "created_at": org.created_at.isoformat()}


@router.post(
    "",
    status_code=201,
    dependencies=[OPERATOR],
    response_model=OrganizationOut,
    responses=route_errors({400: None, 429: "`rate_limited`: past `AC_CONTEXT_ORGANIZATIONS_PER_MINUTE`."}),
)
async def create(body: OrganizationIn, svc: ServicesDep) -> dict[str, Any]:
    """Create an organization and answer its id (429 `rate_limited` past the per-minute limit)."""
    return _out(await create_organization(svc.db, body.name, per_minute=svc.settings.organizations_per_minute))


@router.get("", dependencies=[OPERATOR], response_model=OrganizationList)
async def list_all(
    svc: ServicesDep, limit: Annotated[int, Query(ge=1, le=1000, description="The most organizations to answer.")] = 100
) -> dict[str, Any]:
    """The organizations, oldest first."""
    return {"organizations": [_out(o) for o in await list_organizations(svc.db, limit=limit)]}


@router.get(
    "/{organization_id}",
    dependencies=[ORGANIZATION],
    response_model=OrganizationOut,
    responses=route_errors({404: "`organization_not_found`: no organization has this id."}),
)
async def show(
    organization_id: Annotated[OrganizationId, Path(description="The organization's id.")], svc: ServicesDep
) -> dict[str, Any]:
    """One organization, or 404 `organization_not_found`."""
    return _out(await get_organization(svc.db, organization_id))
