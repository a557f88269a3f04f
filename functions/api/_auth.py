"""Who calls `/v1/`: the bearer value of a request, resolved once at the edge into a `Caller`.

The value is the operator token `AC_CONTEXT_API_TOKEN` (compared in constant time, no database read), or an
API key `ack_<id>_<secret>` (one primary-key lookup and a constant-time hash compare, `state.api_keys`).
Anything else is refused before a route runs or a body byte is read: 401 `auth_missing` (no `Bearer`
value), `auth_invalid` (unknown key, wrong secret, not a key), `auth_revoked` (a revoked key), 503
`auth_not_configured` (no token is set and the value is not a key), or 503 `database_unavailable` while a
key cannot be looked up. The edge stores the caller in the request scope under `CALLER`; the route's scope
dependency (`functions.api._scopes`) reads it. Keys are looked up on every request, with no cache, so a
revocation holds from the next request on (docs/decisions.md, issue 21).

This module must never log or measure a bearer value, nor decide what a scope may do.
"""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from fastapi.responses import JSONResponse

from functions._services import ServiceSlot
from functions.api._http import error_response, is_database_outage
from functions.errors import http_status
from state.api_keys import authenticate_key, parse_key

__all__ = ["CALLER", "OPERATOR_TOKEN", "Caller", "authenticate"]

logger = logging.getLogger("functions.http")

CALLER = "ac_context.caller"
"""The request-scope key under which the edge leaves the authenticated `Caller`."""


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller of one request."""

    organization_id: UUID | None
    """The one organization an organization key works in; None for an operator."""
    key_id: str | None = None
    """The API key's id; None for the operator token `AC_CONTEXT_API_TOKEN`."""

    @property
    def operator(self) -> bool:
        """Whether the caller is operator-scoped."""
        return self.organization_id is None


OPERATOR_TOKEN = Caller(organization_id=None)
"""The caller that presented `AC_CONTEXT_API_TOKEN`."""


def _refusal(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {"Retry-After": "2"} if status == 503 else None
    return error_response(status, code, message, headers=headers)


async def authenticate(app: Any, header: str | None) -> Caller | JSONResponse:
    """The caller a request's `Authorization` header names, or the envelope refusing it."""
    scheme, _, value = (header or "").partition(" ")
    token = value.strip()
    if scheme.lower() != "bearer" or not token:
        return _refusal(401, "auth_missing", "send 'Authorization: Bearer <key>'")
    expected: str | None = app.state.api_token
    if expected and hmac.compare_digest(token.encode(), expected.encode()):
        return OPERATOR_TOKEN
    if parse_key(token) is None:
        if not expected:
            return _refusal(
                503, "auth_not_configured", "AC_CONTEXT_API_TOKEN is not set and the bearer value is not an API key"
            )
        return _refusal(401, "auth_invalid", "the bearer value is not a valid key")
    try:
        holder = await _lookup(app, token)
    except Exception as exc:
        code = str(getattr(exc, "code", ""))
        if is_database_outage(exc) or http_status(code, default=500) == 503:
            health = getattr(app.state, "health", None)
            if health is not None and is_database_outage(exc):
                health.mark_down("an API key lookup lost its database connection")
            logger.warning("an API key could not be looked up: %s", type(exc).__name__)
            return _refusal(503, "database_unavailable", "the database is unreachable, so no key can be checked")
        logger.exception("an API key lookup failed with %s", type(exc).__name__)
        return error_response(500, "internal_error", "the service failed; the failure is logged")
    if holder is None:
        return _refusal(401, "auth_invalid", "the bearer value is not a valid key")
    if holder.revoked:
        return _refusal(401, "auth_revoked", "this API key was revoked")
    return Caller(organization_id=holder.organization_id, key_id=holder.id)


async def _lookup(app: Any, token: str) -> Any:
    slot: ServiceSlot = app.state.slot
    services = slot.get()
    health = getattr(app.state, "health", None)
    if health is not None:
        await health.gate()
    return await authenticate_key(services.db, token)
