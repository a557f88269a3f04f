"""FastAPI dependencies shared by the `/v1/` routers: the open services of the app, and the organization check.

`organization_must_exist` gives every organization-scoped route one answer for an unknown organization:
404 `organization_not_found`, before the route reads or writes anything, instead of a silent answer with
platform rows only or a foreign-key violation. It finds the organization where the routes take it: the
`organization_id` query parameter, a JSON body's `organization_id` (or `invocation.organization_id`), or a
multipart form's `organization_id` field. A value that is not a UUID is left to the route's own validation.

This module must never hold a business rule.
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from uuid import UUID

from fastapi import Depends, Request

from functions._services import Services, ServiceSlot
from functions.api._http import require_token
from state.organizations import require_organization

__all__ = ["OrganizationChecked", "ServicesDep", "organization_must_exist", "services"]

_FORM_SLACK = 64 * 1024
"""Multipart framing allowed above the upload limit, as the upload route allows it."""


async def services(request: Request) -> Services:
    """The open services of this app, or 503 `database_unavailable`.

    That answer comes while the database cannot be reached: at start, or since a request lost its
    connection and no probe has succeeded since.
    """
    slot: ServiceSlot = request.app.state.slot
    opened = slot.get()
    health = getattr(request.app.state, "health", None)
    if health is not None:
        await health.gate()
    return opened


ServicesDep = Annotated[Services, Depends(services)]
"""The services, as a route parameter."""


def _uuid(value: Any) -> UUID | None:
    if isinstance(value, UUID):
        return value
    if not isinstance(value, str):
        return None
    try:
        return UUID(value)
    except ValueError:
        return None


async def _from_body(request: Request, limit: int) -> Any:
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            return None  # the route answers the malformed body
        if not isinstance(body, dict):
            return None
        invocation = body.get("invocation")
        if "organization_id" not in body and isinstance(invocation, dict):
            return invocation.get("organization_id")
        return body.get("organization_id")
    if content_type.startswith("multipart/form-data"):
        declared = request.headers.get("content-length", "")
        if not declared.isdigit() or int(declared) > limit + _FORM_SLACK:
            return None  # the route refuses it as too large before reading it
        form = await request.form(max_files=1, max_fields=8)  # Starlette keeps it for the route
        return form.get("organization_id")
    return None


async def organization_must_exist(request: Request, _: Annotated[None, Depends(require_token)]) -> None:
    """404 `organization_not_found` when the request names an organization that does not exist.

    The services (and so the database) are asked for only when the request names an organization, so a
    route that reads nothing from the database keeps answering through an outage.
    """
    raw: Any = request.query_params.get("organization_id")
    if raw is None and request.method in {"POST", "PUT", "PATCH", "DELETE"}:
        raw = await _from_body(request, request.app.state.settings.max_upload_bytes)
    organization_id = _uuid(raw)
    if organization_id is None:
        return
    svc = await services(request)
    try:
        await require_organization(svc.db, organization_id)
    except Exception:
        await request.close()  # the route will not run, so close the form (its spooled files) here
        raise


OrganizationChecked = Depends(organization_must_exist)
"""The organization check, as a router or route dependency."""
