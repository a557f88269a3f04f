"""Who calls `/v1/`: the bearer value of a request, resolved once at the edge into a `Caller`.

The check is `functions.actions.auth.authenticate` (the console's sign-in runs the same one); this module
answers its refusal as the API's envelope, with `WWW-Authenticate: Bearer` on a 401 and `Retry-After` on a
503. The edge stores the caller in the request scope under `CALLER`; the route's scope dependency
(`functions.api._scopes`) reads it. Keys are looked up on every request, with no cache, so a revocation
holds from the next request on.

This module must never log or measure a bearer value, nor decide what a scope may do.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

from functions._request import services_of
from functions.actions import auth
from functions.actions.scope import OPERATOR_TOKEN, Caller
from functions.api._http import error_response
from functions.errors import ApiError

__all__ = ["CALLER", "OPERATOR_TOKEN", "Caller", "authenticate"]

CALLER = "ac_context.caller"
"""The request-scope key under which the edge leaves the authenticated `Caller`."""


async def authenticate(app: Any, header: str | None) -> Caller | JSONResponse:
    """The caller a request's `Authorization` header names, or the envelope refusing it."""
    health = getattr(app.state, "health", None)
    try:
        return await auth.authenticate(
            header,
            api_token=app.state.api_token,
            services=lambda: services_of(app),
            mark_down=None if health is None else health.mark_down,
        )
    except ApiError as refusal:
        status = refusal.status
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {"Retry-After": "2"} if status == 503 else None
        return error_response(status, refusal.code, str(refusal), headers=headers)
