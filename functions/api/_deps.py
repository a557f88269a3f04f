"""FastAPI dependencies shared by the `/v1/` routers: the open services of the app, and the organization check.

`organization_must_exist` gives every organization-scoped route one answer for an unknown organization:
404 `organization_not_found`, before the route reads or writes anything, instead of a silent answer with
platform rows only or a foreign-key violation. It finds the organization where the routes take it: the
`organization_id` query parameter, a JSON body's `organization_id` (or `invocation.organization_id`), or a
multipart form's `organization_id` field. A value that is not a UUID is left to the route's own validation;
one that is a UUID in another spelling than its canonical text (`urn:uuid:`, braces, upper case, no
hyphens) answers 422 `invalid_request` naming where it stood (`query.organization_id`,
`body.invocation.organization_id`, ...), so no route acts for a look-alike of an organization id.

This module must never hold a business rule.
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from uuid import UUID

from fastapi import Depends, Request

from functions._services import Services, ServiceSlot
from functions.api._http import require_token
from functions.errors import ApiError
from state.ids import UUID_RULE, is_canonical_uuid
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


_FIELD = "organization_id"


async def _from_body(request: Request, limit: int) -> tuple[tuple[str, ...], Any]:
    """Where the body names the organization (its error path) and the value there (None when it does not)."""
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            return (), None  # the route answers the malformed body
        if not isinstance(body, dict):
            return (), None
        invocation = body.get("invocation")
        if _FIELD not in body and isinstance(invocation, dict):
            return ("body", "invocation", _FIELD), invocation.get(_FIELD)
        return ("body", _FIELD), body.get(_FIELD)
    if content_type.startswith("multipart/form-data"):
        declared = request.headers.get("content-length", "")
        if not declared.isdigit() or int(declared) > limit + _FORM_SLACK:
            return (), None  # the route refuses it as too large before reading it
        form = await request.form(max_files=1, max_fields=8)  # Starlette keeps it for the route
        return ("body", _FIELD), form.get(_FIELD)
    return (), None


def _look_alike(loc: tuple[str, ...]) -> ApiError:
    """422 `invalid_request` at `loc`: a UUID spelled other than canonically (a lenient route would take it)."""
    details = [{"loc": list(loc), "msg": f"must be {UUID_RULE}", "type": "uuid_not_canonical"}]
    return ApiError(422, "invalid_request", f"{'.'.join(loc)} must be {UUID_RULE}", details=details)


async def organization_must_exist(request: Request, _: Annotated[None, Depends(require_token)]) -> None:
    """404 `organization_not_found` when the request names an organization that does not exist.

    The services (and so the database) are asked for only when the request names an organization, so a
    route that reads nothing from the database keeps answering through an outage.
    """
    loc: tuple[str, ...] = ("query", _FIELD)
    raw: Any = request.query_params.get(_FIELD)
    if raw is None and request.method in {"POST", "PUT", "PATCH", "DELETE"}:
        loc, raw = await _from_body(request, request.app.state.settings.max_upload_bytes)
    organization_id = _uuid(raw)
    if organization_id is None:
        return
    if not isinstance(raw, UUID) and not is_canonical_uuid(raw):
        await request.close()  # the route will not run, so close the form (its spooled files) here
        raise _look_alike(loc)
    svc = await services(request)
    try:
        await require_organization(svc.db, organization_id)
    except Exception:
        await request.close()  # the route will not run, so close the form (its spooled files) here
        raise


OrganizationChecked = Depends(organization_must_exist)
"""The organization check, as a router or route dependency."""
