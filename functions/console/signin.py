"""`/console/sign-in`, `/console/sign-out` and `/console`: a key in, a session cookie out, and back.

The key is checked by the edge's own check (`functions.actions.auth.authenticate`), so the console accepts
exactly the keys `/v1/` accepts and refuses the rest with the same code, shown on the page. The sign-in
form carries its own CSRF token (a pre-session cookie, `PRE_COOKIE`), so no other site can sign a browser in
with a key of its choosing; a token that is not the cookie's is 403 `csrf_invalid` and starts nothing.
Sign-out is a POST with the session's CSRF token; it revokes the session server-side, so a copy of the
cookie is refused after it. After sign-in the browser goes to `next` only when it is a path under `/console`
once a browser has normalized it; anything else (another host, `//host`, a backslash, a `..` segment, a
scheme) goes to `/console`.
"""

from __future__ import annotations

import re
import secrets
from typing import Annotated
from urllib.parse import unquote

from fastapi import APIRouter, Form, Request, Response
from fastapi.responses import RedirectResponse

from functions._request import services
from functions.actions.auth import authenticate
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep
from functions.console._session import (
    ENDED_REASONS,
    PRE_COOKIE,
    check_csrf,
    clear_pre_session,
    end,
    set_pre_session,
    start,
)
from functions.errors import ApiError

__all__ = ["router"]

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)

_HOME = "/console"
_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")
"""What a browser strips or reads as a slash in a URL: control characters, spaces, backslashes."""


def _next(target: str | None) -> str:
    """Where to go after sign-in: a console path of this site only (never another host, never out of /console)."""
    if not target or _UNSAFE.search(target):
        return _HOME
    path = target.split("?", 1)[0].split("#", 1)[0]
    if path != _HOME and not path.startswith(f"{_HOME}/"):
        return _HOME
    decoded = unquote(path)  # a browser reads %2e%2e as a `..` segment
    if _UNSAFE.search(decoded) or "//" in decoded or any(part in (".", "..") for part in decoded.split("/")):
        return _HOME
    return target


def _form(request: Request, *, status: int = 200, code: str | None = None, message: str = "") -> Response:
    token = secrets.token_urlsafe(32)
    response = render(
        request, "sign_in.html", status_code=status, csrf=token, code=code, message=message,
        next=_next(request.query_params.get("next")), ended=ENDED_REASONS.get(request.query_params.get("ended", "")),
    )  # fmt: skip
    set_pre_session(request, response, token)
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
    expected = request.cookies.get(PRE_COOKIE, "")
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
    clear_pre_session(request, response)
    await start(request, response, caller)
    return response


@router.post("/sign-out")
async def sign_out(request: Request, session: SessionDep, csrf: Annotated[str, Form(max_length=100)] = "") -> Response:
    """End the session: revoked in the database, so no copy of its cookie opens a page again."""
    check_csrf(session, csrf)
    response = RedirectResponse("/console/sign-in", status_code=303)
    await end(request, response, session)
    return response


@router.get("")
async def home(session: SessionDep) -> Response:
    """The operator's organizations, or an organization key's sources."""
    caller = session.caller
    target = "/console/orgs" if caller.operator else f"/console/orgs/{caller.organization_id}/sources"
    return RedirectResponse(target, status_code=303)
