"""`/console/sign-in`, `/console/sign-out` and `/console`: a key in, a session cookie out, and back.

The key is checked by the edge's own check (`functions.actions.auth.authenticate`), so the console accepts
exactly the keys `/v1/` accepts and refuses the rest with the same code, shown on the page. The sign-in
form carries its own CSRF token (a signed pre-session cookie), so no other site can sign a browser in
with a key of its choosing. Sign-out is a POST with the session's CSRF token.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import APIRouter, Form, Request, Response
from fastapi.responses import RedirectResponse

from functions._request import services
from functions.actions.auth import authenticate
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep
from functions.console._session import check_csrf, end, start
from functions.errors import ApiError

__all__ = ["router"]

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)

_PRE = "ac_console_pre"
"""The cookie holding the sign-in form's CSRF token before any session exists."""


def _next(target: str | None) -> str:
    """Where to go after sign-in: a console path of this site only (never another host)."""
    if target and target.startswith("/console/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/console"


def _form(request: Request, *, status: int = 200, code: str | None = None, message: str = "") -> Response:
    token = secrets.token_urlsafe(32)
    response = render(
        request, "sign_in.html", status_code=status, csrf=token, code=code, message=message,
        next=_next(request.query_params.get("next")),
    )  # fmt: skip
    response.set_cookie(_PRE, token, max_age=900, path="/console", httponly=True, samesite="strict")
    return response


@router.get("/sign-in")
async def sign_in_page(request: Request) -> Response:
    """The sign-in form."""
    return _form(request)


@router.post("/sign-in")
async def sign_in(
    request: Request,
    key: Annotated[str, Form(max_length=400)] = "",
    csrf: Annotated[str, Form(max_length=100)] = "",
    next: Annotated[str, Form(max_length=2000)] = "/console",
) -> Response:
    """Check the key as `/v1/` does; on success start a session and go where the user was going."""
    expected = request.cookies.get(_PRE, "")
    if not expected or not secrets.compare_digest(expected.encode(), csrf.encode()):
        return _form(request, status=403, code="csrf_invalid", message="the form expired; sign in again")
    health = getattr(request.app.state, "health", None)
    try:
        caller = await authenticate(
            f"Bearer {key.strip()}",
            api_token=request.app.state.api_token,
            services=lambda: services(request),
            mark_down=None if health is None else health.mark_down,
        )
    except ApiError as refusal:
        return _form(request, status=refusal.status, code=refusal.code, message=str(refusal))
    response = RedirectResponse(_next(next), status_code=303)
    response.delete_cookie(_PRE, path="/console")
    start(request, response, caller)
    return response


@router.post("/sign-out")
async def sign_out(session: SessionDep, csrf: Annotated[str, Form(max_length=100)] = "") -> Response:
    """End the session."""
    check_csrf(session, csrf)
    response = RedirectResponse("/console/sign-in", status_code=303)
    end(response)
    return response


@router.get("")
async def home(session: SessionDep) -> Response:
    """The operator's organizations, or an organization key's sources."""
    caller = session.caller
    target = "/console/orgs" if caller.operator else f"/console/orgs/{caller.organization_id}/sources"
    return RedirectResponse(target, status_code=303)
