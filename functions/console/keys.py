"""`/console/keys`: an operator's API keys: list them, mint one (its secret shown once), revoke one.

The page calls the acts `/v1/keys` and `ac-context keys` call (`functions.actions.keys`), so its scope is
theirs: an operator only (an organization key's session answers 403 `operator_scope_required`). A minted key's
secret is in the one answer to the POST that mints it, which every console answer marks `Cache-Control:
no-store`; the list, the key's page and every later GET show its id and never its secret (only its SHA-256
is stored). Revoking asks first (a GET page with a POST form). Every POST checks the session's CSRF token.

This module must never log a secret, put one into the session, a cookie, a redirect's address or any answer
but the minting POST's.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Path, Query, Request, Response
from fastapi.responses import RedirectResponse

from functions._request import services
from functions.actions import keys
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, operator_only, optional_uuid
from functions.console._session import check_csrf
from functions.errors import ApiError
from state.api_keys import KEY_ID_PATTERN, MAX_KEY_NAME

__all__ = ["PAGE_SIZE", "router"]

router = APIRouter(prefix="/console/keys", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Keys on one page."""
KeyId = Annotated[str, Path(pattern=KEY_ID_PATTERN)]


@router.get("")
async def key_list(
    request: Request,
    session: SessionDep,
    organization: Annotated[str, Query(max_length=100)] = "",
    revoked: Annotated[bool, Query()] = True,
    cursor: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    """Every key (or one organization's), oldest first, a page at a time, never a secret; the mint form."""
    operator_only(session)
    svc = await services(request)
    organization_id = optional_uuid(organization, "organization")
    page = await keys.keys_page(
        svc.db, session.caller, organization_id=organization_id, include_revoked=revoked, cursor=cursor or None,
        limit=PAGE_SIZE,
    )  # fmt: skip
    return render(
        request, "keys.html", rows=page.items, total=page.total, organization=organization, revoked=revoked,
        next_cursor=page.next_cursor,
    )  # fmt: skip


@router.post("")
async def key_mint(
    request: Request,
    session: SessionDep,
    name: Annotated[str, Form(max_length=MAX_KEY_NAME)] = "",
    organization: Annotated[str, Form(max_length=100)] = "",
    csrf: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """Mint a key and show its secret, this once (an empty organization: an operator key)."""
    check_csrf(session, csrf)
    operator_only(session)
    svc = await services(request)
    try:
        minted = await keys.mint(svc.db, session.caller, organization_id=optional_uuid(organization, "organization"),
                                 name=name)  # fmt: skip
    except ValueError:
        raise ApiError(422, "invalid_request", "a key's name has no NUL byte") from None
    return render(request, "key_minted.html", status_code=201, key=minted.key, secret=minted.secret)


@router.get("/{key_id}")
async def key_page(request: Request, session: SessionDep, key_id: KeyId) -> Response:
    """One key: its scope, organization, name, when it was minted and revoked; never its secret."""
    operator_only(session)
    svc = await services(request)
    return render(request, "key.html", key=await keys.key(svc.db, session.caller, key_id))


@router.get("/{key_id}/revoke")
async def key_revoke_page(request: Request, session: SessionDep, key_id: KeyId) -> Response:
    """Ask before revoking."""
    operator_only(session)
    svc = await services(request)
    return render(request, "key_revoke.html", key=await keys.key(svc.db, session.caller, key_id))


@router.post("/{key_id}/revoke")
async def key_revoke(
    request: Request, session: SessionDep, key_id: KeyId, csrf: Annotated[str, Form(max_length=100)] = ""
) -> Response:
    """Revoke the key (refused from its next request on), then show its page."""
    check_csrf(session, csrf)
    operator_only(session)
    svc = await services(request)
    await keys.revoke(svc.db, session.caller, key_id)
    return RedirectResponse(f"/console/keys/{key_id}?revoked=1", status_code=303)
