"""Console sessions: the server-side record that makes a console sign-out end the session everywhere.

A sign-in stores one row (migration 0106) under the SHA-256 of a random session id; the console's signed
cookie carries the id, never the key. `session_holder` answers who a live session acts as: nothing once the
session is signed out (`revoke_session`), expired, or its key is deleted (an organization erasure deletes
its keys); the key's holder, `revoked` set, once its key is revoked, so the caller refuses it. Opening a
session deletes the expired ones, so expired rows last at most until the next sign-in.

This module must never store or log a session id in clear, nor decide what a session may do (that is
`functions.console`).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from state.api_keys import KeyHolder
from state.db import Database
from state.errors import translated_db_errors
from state.queries import load_queries

__all__ = ["SessionHolder", "open_session", "revoke_session", "session_holder"]

QUERIES = load_queries(__file__)
_ID_BYTES = 32


@dataclass(frozen=True, slots=True)
class SessionHolder:
    """Who a live console session acts as."""

    key: KeyHolder | None
    """The key it was signed in with (`revoked` set once the key is revoked); None for the operator token."""


def _digest(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode()).digest()


async def open_session(db: Database, *, key_id: str | None, lifetime_s: int) -> str:
    """Record a new session of `key_id` (None: the operator token) for `lifetime_s` seconds; its random id."""
    session_id = secrets.token_urlsafe(_ID_BYTES)
    with translated_db_errors():
        async with db.connection() as conn:
            await conn.execute(QUERIES["open_console_session"], _digest(session_id), key_id, float(lifetime_s))
    return session_id


async def session_holder(db: Database, session_id: str) -> SessionHolder | None:
    """Who the live session `session_id` acts as; None when it is unknown, signed out or expired."""
    with translated_db_errors():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["find_console_session"], _digest(session_id))
    if row is None:
        return None
    if row["key_id"] is None:
        return SessionHolder(None)
    return SessionHolder(KeyHolder(row["key_id"], row["scope"], row["organization_id"], revoked=row["key_revoked"]))


async def revoke_session(db: Database, session_id: str) -> None:
    """Sign the session `session_id` out: from now on `session_holder` answers None for it (idempotent)."""
    with translated_db_errors():
        async with db.connection() as conn:
            await conn.execute(QUERIES["revoke_console_session"], _digest(session_id))
