"""Who a bearer value names: the operator token, an API key, or a refusal with its code.

The value is the operator token `AC_CONTEXT_API_TOKEN` (compared in constant time, no database read), or an
API key `ack_<id>_<secret>` (one primary-key lookup and a constant-time hash compare, `state.api_keys`).
Anything else raises `ApiError`: 401 `auth_missing` (no `Bearer` value), `auth_invalid` (unknown key, wrong
secret, not a key), `auth_revoked` (a revoked key), 503 `auth_not_configured` (no token is set and the
value is not a key), 503 `database_unavailable` while a key cannot be looked up, 500 `internal_error` for
any other failure of the lookup. Keys are looked up on every call, with no cache, so a revocation holds
from the next request on. The HTTP edge and the console's sign-in both call `authenticate`, so the console
accepts exactly the keys `/v1/` accepts.

This module must never log or measure a bearer value.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable

from functions._outages import is_database_outage
from functions._services import Services
from functions.actions.scope import OPERATOR_TOKEN, Caller
from functions.errors import ApiError, http_status
from state.api_keys import authenticate_key, parse_key

__all__ = ["authenticate"]

logger = logging.getLogger("functions.http")


async def authenticate(
    header: str | None,
    *,
    api_token: str | None,
    services: Callable[[], Awaitable[Services]],
    mark_down: Callable[[str], None] | None = None,
) -> Caller:
    """The caller an `Authorization` header names, or the `ApiError` refusing it.

    `services` opens the services for a key lookup (gated by the database's health); `mark_down` records a
    lookup that lost its database connection.
    """
    scheme, _, value = (header or "").partition(" ")
    token = value.strip()
    if scheme.lower() != "bearer" or not token:
        raise ApiError(401, "auth_missing", "send 'Authorization: Bearer <key>'")
    if api_token and hmac.compare_digest(token.encode(), api_token.encode()):
        return OPERATOR_TOKEN
    if parse_key(token) is None:
        if not api_token:
            raise ApiError(
                503, "auth_not_configured", "AC_CONTEXT_API_TOKEN is not set and the bearer value is not an API key"
            )
        raise ApiError(401, "auth_invalid", "the bearer value is not a valid key")
    try:
        holder = await authenticate_key((await services()).db, token)
    except Exception as exc:
        code = str(getattr(exc, "code", ""))
        if is_database_outage(exc) or http_status(code, default=500) == 503:
            if mark_down is not None and is_database_outage(exc):
                mark_down("an API key lookup lost its database connection")
            logger.warning("an API key could not be looked up: %s", type(exc).__name__)
            raise ApiError(
                503, "database_unavailable", "the database is unreachable, so no key can be checked"
            ) from None
        logger.exception("an API key lookup failed with %s", type(exc).__name__)
        raise ApiError(500, "internal_error", "the service failed; the failure is logged") from None
    if holder is None:
        raise ApiError(401, "auth_invalid", "the bearer value is not a valid key")
    if holder.revoked:
        raise ApiError(401, "auth_revoked", "this API key was revoked")
    return Caller(organization_id=holder.organization_id, key_id=holder.id)
