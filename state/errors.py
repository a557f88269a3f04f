"""The errors of the `state` package, and the one place asyncpg errors are translated.

    CodedError                          the shared root (`context.errors` and `memory.errors` subclass it
    │                                   too): a stable `code`, a message defaulting to the class docstring
    └── StateError                      root of this package; `code` is stable and machine readable
        ├── SettingsError               a wrong setting, found at start
        ├── MigrationError              a migration failed to apply
        │   └── MigrationChecksumError  an applied migration file was edited
        ├── UnknownTableError           scoped_db was asked for a table it does not know
        ├── UnknownQueryError           a named query that no queries.sql defines
        ├── OrganizationNotFoundError   no organization has this id
        ├── ApiKeyNotFoundError         no API key has this id
        ├── ReceiptNotFoundError        no removal receipt has this id
        ├── OrganizationErasingError    a write for an organization being erased (refused, nothing written)
        ├── PersonErasingError          a write naming a person being erased (refused, nothing written)
        ├── RateLimitedError            too many of one operation in its window; retry after `retry_after_s`
        └── DatabaseError               the database refused or failed a statement (original as __cause__)
            └── DatabaseUnavailableError  no connection could be made (unreachable, or the login refused)

This module must never import a driver error into another package's signature, and never import the
driver at import time: `context.errors` and `memory.errors` import `CodedError` from here and must stay
cheap to import.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = [
    "ApiKeyNotFoundError",
    "CodedError",
    "DatabaseError",
    "DatabaseUnavailableError",
    "MigrationChecksumError",
    "MigrationError",
    "OrganizationErasingError",
    "OrganizationNotFoundError",
    "PersonErasingError",
    "RateLimitedError",
    "ReceiptNotFoundError",
    "SettingsError",
    "StateError",
    "UnknownQueryError",
    "UnknownTableError",
    "connect_failure_reason",
    "database_location",
    "translate_connect_error",
    "translate_db_error",
    "translated_db_errors",
]


class CodedError(Exception):
    """An error of this project."""

    code: str
    """Stable and machine readable: a caller maps the code, never the message text (each root sets it)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or self.code).strip())


class StateError(CodedError):
    """An error of the state layer."""

    code = "state_error"


class SettingsError(StateError, ValueError):
    """A setting is wrong; the message names it."""

    code = "settings_invalid"


class MigrationError(StateError):
    """A migration failed to apply."""

    code = "migration_failed"


class MigrationChecksumError(MigrationError):
    """An already applied migration file was edited; add a new migration instead."""

    code = "migration_edited"


class UnknownTableError(StateError, LookupError):
    """The scoped client does not know this table, so it refuses to read it."""

    code = "table_unknown"


class UnknownQueryError(StateError, LookupError):
    """No queries.sql defines a query of this name."""

    code = "query_unknown"


class OrganizationNotFoundError(StateError, LookupError):
    """No organization has this id."""

    code = "organization_not_found"


class ApiKeyNotFoundError(StateError, LookupError):
    """No API key has this id."""

    code = "api_key_not_found"


class ReceiptNotFoundError(StateError, LookupError):
    """No removal receipt has this id."""

    code = "receipt_not_found"


class OrganizationErasingError(StateError):
    """The organization is being erased: its writes are refused until the erasure ends."""

    code = "organization_erasing"


class PersonErasingError(StateError):
    """A person this write names is being erased: the write is refused until the erasure ends."""

    code = "person_erasing"


class RateLimitedError(StateError):
    """Too many of this operation in its window; retry after `retry_after_s` seconds."""

    code = "rate_limited"

    def __init__(self, message: str | None = None, *, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DatabaseError(StateError):
    """The database refused or failed a statement."""

    code = "database_error"

    def __init__(self, message: str | None = None, *, constraint: str | None = None) -> None:
        super().__init__(message)
        self.constraint = constraint


class DatabaseUnavailableError(DatabaseError):
    """No connection to the database could be made."""

    code = "database_unavailable"
    hint: str | None = None
    """A next step for a person, when the default one (check DATABASE_URL) does not fit."""


def translate_db_error(exc: BaseException) -> DatabaseError:
    """Translate a driver error into a `DatabaseError` (raise it `from exc`)."""
    import asyncpg  # only here: importing this module must not load the driver

    if isinstance(exc, OSError | asyncpg.CannotConnectNowError | asyncpg.ConnectionDoesNotExistError):
        return DatabaseUnavailableError(f"database unavailable: {exc}")
    constraint = getattr(exc, "constraint_name", None)
    return DatabaseError(f"database error: {exc}", constraint=constraint)


@contextmanager
def translated_db_errors() -> Iterator[None]:
    """A block whose driver errors (and lost sockets) leave it as a `DatabaseError`, the original as the cause."""
    import asyncpg  # only here, as in translate_db_error

    try:
        yield
    except (OSError, asyncpg.PostgresError) as exc:
        raise translate_db_error(exc) from exc


def database_location(url: str) -> str:
    """Where `url` points, as `host:port` (or the socket path), never with its user or password."""
    try:
        parts = urlsplit(url)
        query = parse_qs(parts.query)
    except ValueError:
        return "the configured database"
    netloc = parts.netloc.rpartition("@")[2]
    host = netloc or (query.get("host") or [""])[0]
    port = (query.get("port") or ["5432"])[0]
    if host.startswith("/"):
        return f"{host}/.s.PGSQL.{port}"
    if not host:
        return f"localhost:{port}"
    return host if ":" in host.rpartition("]")[2] else f"{host}:{port}"


def _secrets(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
        found = [parts.password or "", *parse_qs(parts.query).get("password", [])]
    except ValueError:
        found = []
    return [s for value in found for s in {value, unquote(value)} if s]


def _scrub(text: str, url: str) -> str:
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    lines = text.strip().splitlines()
    return lines[0].strip() if lines else ""


def connect_failure_reason(exc: BaseException) -> str:
    """Why a connection could not be made, in words (the driver's text where it says it best)."""
    import socket

    import asyncpg  # only here, as in translate_db_error

    if isinstance(exc, socket.gaierror):
        return "its host name does not resolve"
    if isinstance(exc, ConnectionRefusedError) or "[Errno 111]" in str(exc):
        return "connection refused"
    if isinstance(exc, FileNotFoundError):
        return "no server listens there"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, asyncpg.CannotConnectNowError):
        return "it is starting up or shutting down"
    if isinstance(exc, OSError) and exc.errno is not None and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:] if exc.errno != errno.EIO else exc.strerror
    return str(exc) or type(exc).__name__


def translate_connect_error(exc: BaseException, *, url: str) -> StateError:
    """Translate a failure to connect to `url` into one line naming where (raise it `from exc`).

    A network failure is `cannot reach the database at host:port (connection refused)`; a server that
    answered but refused the login or the database is `the database at host:port refused the connection
    (…)`; both are `database_unavailable`. A URL the driver cannot parse is `settings_invalid`. The
    password of `url` never appears in the message.
    """
    import asyncpg  # only here, as in translate_db_error

    where = database_location(url)
    if isinstance(exc, ValueError):
        return SettingsError(f"invalid settings: DATABASE_URL: {_scrub(str(exc), url)}")
    why = _scrub(connect_failure_reason(exc), url)
    if isinstance(exc, asyncpg.PostgresError) and not isinstance(exc, asyncpg.CannotConnectNowError):
        return DatabaseUnavailableError(f"the database at {where} refused the connection ({why})")
    return DatabaseUnavailableError(f"cannot reach the database at {where} ({why})")
