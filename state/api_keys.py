"""API keys of `/v1/`: mint, list, revoke, and the one lookup a request makes.

A key is `ack_<id>_<secret>`: a public id of 16 hex characters, then a secret of 32 random bytes
(URL-safe base64). The id is the table's primary key, so authenticating a request is one index lookup;
only the SHA-256 of the secret is stored, and `verify_secret` compares it in constant time. A key is either
operator-scoped (`organization_id` None) or bound to one organization. A revoked key stays listed, with its
`revoked_at`, and `authenticate_key` refuses it.

This module must never log, return or store a secret after `mint_key` answers it, nor hold a rule about
which route a scope may call (that is `functions.api`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from uuid import UUID

import asyncpg

from state.db import Database
from state.erasure_marks import guard_writes
from state.errors import ApiKeyNotFoundError, OrganizationNotFoundError, translated_db_errors
from state.paging import FIRST_ASC, Page, fingerprint, page_of, page_size, start
from state.queries import load_queries

__all__ = [
    "KEY_ID_PATTERN",
    "KEY_PREFIX",
    "MAX_KEY_NAME",
    "ApiKey",
    "KeyHolder",
    "KeyScope",
    "MintedKey",
    "authenticate_key",
    "get_key",
    "mint_key",
    "page_keys",
    "parse_key",
    "revoke_key",
    "verify_secret",
]

QUERIES = load_queries(__file__)
KEY_PREFIX = "ack_"
"""What every API key starts with (so a leaked one is recognisable, e.g. by a secret scanner)."""
KEY_ID_PATTERN = r"^[0-9a-f]{16}$"
"""A key id: 16 lowercase hex characters."""
MAX_KEY_NAME = 200
"""The longest key name accepted."""
_SECRET_BYTES = 32
_EARLIEST = FIRST_ASC[0]
_TOKEN = re.compile(r"ack_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")

KeyScope = Literal["operator", "organization"]
"""What a key may do: everything (`operator`), or work inside one organization."""


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One key as it is listed: never its secret."""

    id: str
    """The public id (the part of the key after `ack_`, before the secret)."""
    scope: KeyScope
    """`operator` or `organization`."""
    organization_id: UUID | None
    """The organization an organization key is bound to; None for an operator key."""
    name: str
    """A label for people ("billing service", "ci")."""
    created_at: datetime
    """When it was minted."""
    revoked_at: datetime | None
    """When it was revoked; None while it is valid."""


@dataclass(frozen=True, slots=True)
class KeyHolder:
    """Who a request's key says it is: what one authentication lookup answers."""

    id: str
    """The key id."""
    scope: KeyScope
    """`operator` or `organization`."""
    organization_id: UUID | None
    """The organization of an organization key; None for an operator key."""
    revoked: bool
    """Whether the key was revoked (its secret matched, but it is refused)."""


@dataclass(frozen=True, slots=True)
class MintedKey:
    """A key just minted, with the one copy of its secret that will ever exist outside the caller."""

    key: ApiKey
    """The stored key."""
    secret: str
    """The whole bearer value, `ack_<id>_<secret>`; shown once, stored only as a hash."""


def _key(row: asyncpg.Record) -> ApiKey:
    return ApiKey(row["id"], row["scope"], row["organization_id"], row["name"], row["created_at"], row["revoked_at"])


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def parse_key(token: str) -> tuple[str, str] | None:
    """`(id, secret)` of a bearer value shaped like an API key, or None."""
    match = _TOKEN.fullmatch(token)
    return None if match is None else (match.group(1), match.group(2))


def verify_secret(secret: str, stored_sha256: bytes) -> bool:
    """Whether `secret` hashes to the stored digest (constant-time compare)."""
    return hmac.compare_digest(_digest(secret), stored_sha256)


async def mint_key(db: Database, *, organization_id: UUID | None, name: str = "") -> MintedKey:
    """Mint a key: bound to `organization_id`, or operator-scoped when it is None.

    ValueError for a name longer than `MAX_KEY_NAME`; `OrganizationNotFoundError` for an unknown organization,
    `OrganizationErasingError` for one being erased.
    """
    label = name.strip()
    if len(label) > MAX_KEY_NAME or "\x00" in label:
        raise ValueError(f"a key name has at most {MAX_KEY_NAME} characters and no NUL byte")
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    scope: KeyScope = "operator" if organization_id is None else "organization"
    with translated_db_errors():
        try:
            async with db.connection() as conn, conn.transaction():
                if organization_id is not None:
                    await guard_writes(conn, organization_id)
                row = await conn.fetchrow(
                    QUERIES["insert_api_key"], key_id, scope, organization_id, label, _digest(secret)
                )
        except asyncpg.ForeignKeyViolationError:
            raise OrganizationNotFoundError(f"no organization {organization_id}") from None
    assert row is not None  # INSERT … RETURNING answers the row
    return MintedKey(_key(row), f"{KEY_PREFIX}{key_id}_{secret}")


async def authenticate_key(db: Database, token: str) -> KeyHolder | None:
    """Check a bearer value shaped like a key: one primary-key lookup, then a constant-time hash compare.

    The holder (`revoked` set for a revoked key whose secret matched), or None: no such id, a wrong
    secret, or not a key at all.
    """
    parsed = parse_key(token)
    if parsed is None:
        return None
    key_id, secret = parsed
    with translated_db_errors():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["find_api_key"], key_id)
    if row is None or not verify_secret(secret, bytes(row["secret_sha256"])):
        return None
    return KeyHolder(row["id"], row["scope"], row["organization_id"], revoked=row["revoked_at"] is not None)


async def page_keys(
    db: Database,
    *,
    organization_id: UUID | None = None,
    include_revoked: bool = True,
    cursor: str | None = None,
    limit: int = 1000,
) -> Page[ApiKey]:
    """A page of keys (of one organization, or all), oldest first; never a secret (`state.paging`)."""
    scope = fingerprint(organization_id, include_revoked)
    after = start(cursor, "keys", scope, (_EARLIEST, ""), (datetime, str))
    with translated_db_errors():
        async with db.connection() as conn:
            total = int(await conn.fetchval(QUERIES["count_api_keys"], organization_id, include_revoked))
            rows = await conn.fetch(
                QUERIES["page_api_keys"], organization_id, include_revoked, *after, page_size(limit) + 1
            )
    return page_of(
        [_key(r) for r in rows], limit=limit, total=total, listing="keys", scope=scope,
        position=lambda k: (k.created_at, k.id),
    )  # fmt: skip


async def get_key(db: Database, key_id: str) -> ApiKey:
    """One key, without its secret; `ApiKeyNotFoundError` for an unknown or malformed id."""
    if re.fullmatch(KEY_ID_PATTERN, key_id) is None:
        raise ApiKeyNotFoundError("no such API key: a key id is 16 lowercase hex characters")
    with translated_db_errors():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["get_api_key"], key_id)
    if row is None:
        raise ApiKeyNotFoundError(f"no API key {key_id}")
    return _key(row)


async def revoke_key(db: Database, key_id: str) -> ApiKey:
    """Revoke a key (idempotent: a second revocation keeps the first time); `ApiKeyNotFoundError` if none."""
    if re.fullmatch(KEY_ID_PATTERN, key_id) is None:
        raise ApiKeyNotFoundError("no such API key: a key id is 16 lowercase hex characters")
    with translated_db_errors():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["revoke_api_key"], key_id)
    if row is None:
        raise ApiKeyNotFoundError(f"no API key {key_id}")
    return _key(row)
