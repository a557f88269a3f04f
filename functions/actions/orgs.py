"""Create, list and read organizations: the acts behind `/v1/organizations`, the console's list and `ac-context org`.

Creating and listing are an operator's acts; reading one is open to its own organization's key (the scope
check, `functions.actions.scope.check_organization`). These acts read and write rows only, so they take the
database alone. This module must never delete an organization: an erasure does.
"""

from __future__ import annotations

from uuid import UUID

from functions.actions.scope import Caller, check_organization, require_operator
from state.db import Database
from state.organization_overview import (
    OrganizationCounts,
    OrganizationOverview,
    organization_counts,
    page_organizations,
)
from state.organizations import Organization, create_organization, get_organization
from state.paging import Page

__all__ = ["counts", "create", "organization", "organizations_page"]


async def create(db: Database, caller: Caller, name: str, *, per_minute: int | None = None) -> Organization:
    """Create an organization (with `per_minute`, 429 `rate_limited` past that many a minute)."""
    require_operator(caller)
    return await create_organization(db, name, per_minute=per_minute)


async def organizations_page(
    db: Database,
    caller: Caller,
    *,
    name: str | None,
    cursor: str | None,
    limit: int,
    sort: str | None = None,
    direction: str | None = None,
) -> Page[OrganizationOverview]:
    """A page of organizations, oldest first unless sorted, each with its counts; `name` filters by its text."""
    require_operator(caller)
    return await page_organizations(db, name=name, sort=sort, direction=direction, cursor=cursor, limit=limit)


async def organization(db: Database, caller: Caller, organization_id: UUID) -> Organization:
    """One organization the caller may name, or its refusal (404 `organization_not_found`)."""
    await check_organization(db, caller, organization_id)
    return await get_organization(db, organization_id)


async def counts(db: Database, caller: Caller, organization_id: UUID) -> OrganizationCounts:
    """One organization's counts strip (sources by status, chunks, memories, receipts, outbox rows waiting).

    The one read behind the strip, so its source can change (counters kept by triggers) without its callers.
    """
    await check_organization(db, caller, organization_id)
    return await organization_counts(db, organization_id)
