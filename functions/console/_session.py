"""The console's session: who signed in, carried in one signed, expiring cookie that never holds the key.

Sign-in checks an API key exactly as the `/v1/` edge does (`functions.api._auth.authenticate`), then sets
the cookie `ac_console` to a value signed with itsdangerous: the key's id (empty for the operator token),
its organization, and a random CSRF token. The key's secret is never in it, in clear or otherwise. The
signing secret is derived from the operator token (`AC_CONTEXT_API_TOKEN`), so every process of a
deployment reads the same cookies and changing the token ends every session; without a token it is random
per process. The cookie is HttpOnly, SameSite=Strict, Secure in production (an Inngest client in
production mode, as `functions._production` decides), and expires after `SESSION_MAX_AGE_S` (the
signature's timestamp is checked too, so an old cookie replayed by hand is refused). Every request
re-reads the key by id (`state.api_keys.key_holder`): a revoked key ends its session at once.

This module must never log or put into a cookie a key or a token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from fastapi import Request, Response
from itsdangerous import BadSignature, URLSafeTimedSerializer

from functions.actions.scope import Caller
from functions.errors import ApiError
from state.api_keys import key_holder

__all__ = ["COOKIE", "SESSION_MAX_AGE_S", "ConsoleSession", "SignInRequired", "check_csrf", "end", "read", "start"]

COOKIE = "ac_console"
"""The session cookie's name."""
SESSION_MAX_AGE_S = 8 * 3600
"""How long a session lasts after sign-in: a working day."""
_SALT = "ac-context console session"


class SignInRequired(Exception):
    """The request carries no valid session: the console answers with the sign-in page."""


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    """A signed-in console user."""

    caller: Caller
    """The caller the session acts as, with the same scope as its key on `/v1/`."""
    csrf: str
    """The token every form of this session posts back."""


def _serializer(request: Request) -> URLSafeTimedSerializer:
    app = request.app
    secret: bytes | None = getattr(app.state, "console_secret", None)
    if secret is None:
        token: str | None = app.state.api_token
        if token:
            secret = hmac.new(token.encode(), _SALT.encode(), hashlib.sha256).digest()
        else:
            secret = secrets.token_bytes(32)
        app.state.console_secret = secret
    return URLSafeTimedSerializer(secret, salt=_SALT)


def _secure(request: Request) -> bool:
    return bool(getattr(request.app.state.inngest, "is_production", False))


def start(request: Request, response: Response, caller: Caller) -> None:
    """Set the session cookie for `caller` (a new CSRF token each sign-in)."""
    payload = {
        "k": caller.key_id or "",
        "o": "" if caller.organization_id is None else str(caller.organization_id),
        "c": secrets.token_urlsafe(32),
    }
    response.set_cookie(
        COOKIE,
        _serializer(request).dumps(payload),
        max_age=SESSION_MAX_AGE_S,
        path="/console",
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )


def end(response: Response) -> None:
    """Clear the session cookie."""
    response.delete_cookie(COOKIE, path="/console", httponly=True, samesite="strict")


async def read(request: Request) -> ConsoleSession:
    """The request's session, or `SignInRequired` (no cookie, a bad or old signature, a revoked key)."""
    raw = request.cookies.get(COOKIE)
    if not raw:
        raise SignInRequired
    try:
        payload: Any = _serializer(request).loads(raw, max_age=SESSION_MAX_AGE_S)
    except BadSignature:
        raise SignInRequired from None
    if not isinstance(payload, dict) or not all(isinstance(payload.get(k), str) for k in ("k", "o", "c")):
        raise SignInRequired
    key_id, organization, csrf = payload["k"], payload["o"], payload["c"]
    if not key_id:
        if organization or not request.app.state.api_token:
            raise SignInRequired
        return ConsoleSession(Caller(organization_id=None), csrf)
    holder = await key_holder(request.app.state.slot.get().db, key_id)
    if holder is None or holder.revoked:
        raise SignInRequired
    if (holder.organization_id is None) != (not organization) or (
        holder.organization_id is not None and str(holder.organization_id) != organization
    ):
        raise SignInRequired
    org = None if holder.organization_id is None else UUID(str(holder.organization_id))
    return ConsoleSession(Caller(organization_id=org, key_id=holder.id), csrf)


def check_csrf(session: ConsoleSession, sent: object) -> None:
    """Refuse a form whose CSRF token is missing or not this session's: 403 `csrf_invalid`."""
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), session.csrf.encode()):
        raise ApiError(403, "csrf_invalid", "the form's CSRF token is missing or belongs to another session")
