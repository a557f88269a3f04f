"""Opening connections to PostgreSQL: every connect of `state` goes through here, translated once.

`connect(url)` and `create_pool(url, ...)` are asyncpg's, except that a failure to connect (the host does
not resolve, nothing listens, the login or the database is refused, the URL cannot be parsed) leaves as
`state.errors.translate_connect_error` says: one line naming `host:port`, the driver's error as the cause,
never the password. Errors after a connection is made are not this module's (`translated_db_errors`).
This module must never retry: the caller decides whether to wait and try again.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from state.errors import translate_connect_error

__all__ = ["CONNECT_FAILURES", "connect", "create_pool"]

CONNECT_FAILURES: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    ValueError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
)
"""What asyncpg raises when it cannot make a connection."""


async def connect(url: str, **kwargs: Any) -> asyncpg.Connection:
    """One connection to `url`; a failure to connect is `DatabaseUnavailableError` (or `SettingsError`)."""
    try:
        return await asyncpg.connect(url, **kwargs)
    except CONNECT_FAILURES as exc:
        raise translate_connect_error(exc, url=url) from exc


async def create_pool(url: str, **kwargs: Any) -> asyncpg.Pool:
    """A pool on `url` with its first connections open; a failure to connect is translated as in `connect`."""
    try:
        return await asyncpg.create_pool(url, **kwargs)
    except CONNECT_FAILURES as exc:
        raise translate_connect_error(exc, url=url) from exc
