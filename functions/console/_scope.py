"""The console's scope: the same rules as `/v1/`, answered as the console answers them.

A page names its organization in the path and passes the one scope check (`functions.actions.scope`, the API's
and the CLI's too). An organization key's session names its own organization only: any other organization,
existing or not, answers 404 `organization_not_found` (the console says nothing about another tenant, not even
that it exists). An operator may name any organization that exists, and on the receipt pages one whose row an
erasure removed. An object of another organization (a source, a receipt) is 404 by the check of the read or
act function the API route calls.

This module must never widen a scope: what it lets through is what the API would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from uuid import UUID

from fastapi import Depends, Request

from functions._request import services
from functions._services import Services
from functions.actions.orgs import counts
from functions.actions.scope import check_organization, require_operator
from functions.console._session import ConsoleSession, read
from functions.errors import ApiError
from state.errors import OrganizationNotFoundError
from state.organizations import get_organization

__all__ = ["ConsoleOrg", "SessionDep", "current_session", "operator_only", "optional_uuid", "organization_of"]


async def current_session(request: Request) -> ConsoleSession:
    """The request's session (or the sign-in page), left on `request.state` for the templates."""
    session = await read(request)
    request.state.console_session = session
    return session


SessionDep = Annotated[ConsoleSession, Depends(current_session)]
"""The signed-in session, as a route parameter."""


@dataclass(frozen=True, slots=True)
class ConsoleOrg:
    """The organization a page works in."""

    id: UUID
    """Its id."""
    name: str
    """Its name (empty for an erased organization)."""
    erased: bool = False
    """Its row is gone; only its receipts remain."""


def optional_uuid(value: str, field: str) -> UUID | None:
    """A form field that may be left empty (None) or holds a UUID (422 `invalid_request` otherwise)."""
    if not value.strip():
        return None
    try:
        return UUID(value.strip())
    except ValueError:
        raise ApiError(422, "invalid_request", f"{field} must be a UUID or empty") from None


def _not_found(organization_id: UUID) -> ApiError:
    return ApiError(404, "organization_not_found", f"no organization {organization_id}")


def operator_only(session: ConsoleSession) -> None:
    """Refuse an organization key on an operator page: 403 `operator_scope_required`, as the API does."""
    require_operator(session.caller)


async def organization_of(
    request: Request, session: ConsoleSession, organization_id: UUID, *, erased: bool = False
) -> tuple[Services, ConsoleOrg]:
    """The services and the organization a page names, or 404 when the session may not see it."""
    svc = await services(request)
    try:
        await check_organization(svc.db, session.caller, organization_id, erased=erased)
        org = await get_organization(svc.db, organization_id)
    except ApiError as refusal:  # another tenant's organization: the console says nothing about it
        if refusal.code == "organization_forbidden":
            raise _not_found(organization_id) from None
        raise
    except OrganizationNotFoundError:  # the check let it through, so an erasure removed its row
        if not erased:
            raise _not_found(organization_id) from None
        return svc, ConsoleOrg(organization_id, "", erased=True)
    request.state.console_org = org
    request.state.org_counts = await counts(svc.db, session.caller, org.id)  # the strip atop every org page
    return svc, ConsoleOrg(org.id, org.name)
