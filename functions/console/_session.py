"""The console's session: who signed in, recorded by the server and named by one signed, expiring cookie.

Sign-in checks an API key exactly as the `/v1/` edge does (`functions.api._auth.authenticate`), records a
session in the database (`state.console_sessions`: the key's id, or none for the operator token, and an
expiry), then sets the cookie `ac_console` to a value signed with itsdangerous: the session's random id and
a random CSRF token. The key's secret is never in it, in clear or otherwise. Every request reads the
session's row: a session signed out (`end` revokes the row, so a copy of the cookie taken before sign-out is
refused after it), expired, or whose key is revoked or deleted is no session. The signing secret is derived
from the operator token (`AC_CONTEXT_API_TOKEN`), so every process of a deployment reads the same cookies
and changing the token ends every session; without a token it is random per process.

Both cookies, the session's and the sign-in form's pre-session CSRF cookie (`PRE_COOKIE`), are HttpOnly,
SameSite=Strict, Path=/console, and Secure in production (an Inngest client in production mode, as
`functions._production` decides). The session expires after `SESSION_MAX_AGE_S`, checked three times: the
cookie's Max-Age, the signature's timestamp (an old cookie replayed by hand is refused) and the row's expiry.

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
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from functions.actions.scope import Caller
from functions.errors import ApiError
from state.console_sessions import open_session, revoke_session, session_holder

__all__ = [
    "COOKIE",
    "ENDED_REASONS",
    "PRE_COOKIE",
    "PRE_MAX_AGE_S",
    "SESSION_MAX_AGE_S",
    "ConsoleSession",
    "SignInRequired",
    "check_csrf",
    "clear_pre_session",
    "end",
    "production",
    "read",
    "set_pre_session",
    "start",
]

COOKIE = "ac_console"
"""The session cookie's name."""
PRE_COOKIE = "ac_console_pre"
"""The cookie holding the sign-in form's CSRF token before any session exists."""
SESSION_MAX_AGE_S = 8 * 3600
"""How long a session lasts after sign-in: a working day."""
PRE_MAX_AGE_S = 900
"""How long a sign-in form stays valid."""
_PATH = "/console"
_SALT = "ac-context console session"


class SignInRequired(Exception):
    """The request carries no valid session: the console answers with the sign-in page.

    `reason` says why a session the browser held ended (`ENDED_REASONS`), or is None when it held none.
    """

    def __init__(self, reason: str | None = None) -> None:
        super().__init__(reason or "no session")
        self.reason = reason


ENDED_REASONS = {
    "expired": "it reached its 8-hour limit",
    "ended": "it was signed out, it expired, or its key is gone",
    "revoked": "its key was revoked",
    "invalid": "its cookie could not be checked (the service's token changed, or the cookie was altered)",
    "no_token": "the service no longer has the operator token it was signed in with",
}
"""Why a session ended, as the sign-in page says it ("Your session ended because …")."""


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    """A signed-in console user."""

    caller: Caller
    """The caller the session acts as, with the same scope as its key on `/v1/`."""
    csrf: str
    """The token every form of this session posts back."""
    session_id: str
    """The session's id (what its cookie names); sign-out revokes it."""


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


def production(request: Request) -> bool:
    """Whether the service runs in production (its Inngest client says so): cookies Secure, HSTS sent."""
    return bool(getattr(request.app.state.inngest, "is_production", False))


def set_pre_session(request: Request, response: Response, token: str) -> None:
    """Set the sign-in form's CSRF cookie: the same flags as the session's, for `PRE_MAX_AGE_S`."""
    response.set_cookie(
        PRE_COOKIE, token, max_age=PRE_MAX_AGE_S, path=_PATH, httponly=True, samesite="strict",
        secure=production(request),
    )  # fmt: skip


def clear_pre_session(request: Request, response: Response) -> None:
    """Clear the sign-in form's CSRF cookie (it served its one sign-in)."""
    response.delete_cookie(PRE_COOKIE, path=_PATH, httponly=True, samesite="strict", secure=production(request))


async def start(request: Request, response: Response, caller: Caller) -> None:
    """Record a session for `caller` and set its cookie (a new session id and CSRF token each sign-in)."""
    db = request.app.state.slot.get().db
    session_id = await open_session(db, key_id=caller.key_id, lifetime_s=SESSION_MAX_AGE_S)
    payload = {"s": session_id, "c": secrets.token_urlsafe(32)}
    response.set_cookie(
        COOKIE,
        _serializer(request).dumps(payload),
        max_age=SESSION_MAX_AGE_S,
        path=_PATH,
        httponly=True,
        samesite="strict",
        secure=production(request),
    )


async def end(request: Request, response: Response, session: ConsoleSession) -> None:
    """Revoke `session` in the database (every copy of its cookie with it) and clear the cookie."""
    await revoke_session(request.app.state.slot.get().db, session.session_id)
    response.delete_cookie(COOKIE, path=_PATH, httponly=True, samesite="strict", secure=production(request))


async def read(request: Request) -> ConsoleSession:
    """The request's session, or `SignInRequired` (no cookie, a bad or old signature, signed out, a revoked key)."""
    raw = request.cookies.get(COOKIE)
    if not raw:
        raise SignInRequired
    try:
        payload: Any = _serializer(request).loads(raw, max_age=SESSION_MAX_AGE_S)
    except SignatureExpired:
        raise SignInRequired("expired") from None
    except BadSignature:
        raise SignInRequired("invalid") from None
    if not isinstance(payload, dict) or not all(isinstance(payload.get(k), str) and payload[k] for k in ("s", "c")):
        raise SignInRequired("invalid")
    session_id, csrf = payload["s"], payload["c"]
    holder = await session_holder(request.app.state.slot.get().db, session_id)
    if holder is None:
        raise SignInRequired("ended")
    if holder.key is None:
        if not request.app.state.api_token:
            raise SignInRequired("no_token")
        return ConsoleSession(Caller(organization_id=None), csrf, session_id)
    if holder.key.revoked:
        raise SignInRequired("revoked")
    org = None if holder.key.organization_id is None else UUID(str(holder.key.organization_id))
    return ConsoleSession(Caller(organization_id=org, key_id=holder.key.id), csrf, session_id)


def check_csrf(session: ConsoleSession, sent: object) -> None:
    """Refuse a form whose CSRF token is missing or not this session's: 403 `csrf_invalid`."""
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), session.csrf.encode()):
        raise ApiError(403, "csrf_invalid", "the form's CSRF token is missing or belongs to another session")
