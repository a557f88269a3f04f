"""Mint, list and revoke API keys (operator only): the acts behind `/v1/keys` and `ac-context keys`.

A minted key's secret is answered once and stored only as a hash (`state.api_keys`); a list never holds a
secret; a revoked key is refused from its next request on. These acts read and write rows only, so they
take the database alone (the command line opens nothing else). This module must never log a secret.
"""

from __future__ import annotations

from uuid import UUID

from functions.actions.scope import Caller, require_operator
from state.api_keys import ApiKey, MintedKey, get_key, mint_key, page_keys, revoke_key
from state.db import Database
from state.paging import Page

__all__ = ["key", "keys_page", "mint", "revoke"]


async def mint(db: Database, caller: Caller, *, organization_id: UUID | None, name: str) -> MintedKey:
    """Mint a key bound to `organization_id` (None: an operator key); its secret is in the answer only."""
    require_operator(caller)
    return await mint_key(db, organization_id=organization_id, name=name)


async def keys_page(
    db: Database,
    caller: Caller,
    *,
    organization_id: UUID | None,
    include_revoked: bool,
    cursor: str | None,
    limit: int,
) -> Page[ApiKey]:
    """A page of keys (of one organization, or all), oldest first, never their secrets."""
    require_operator(caller)
    return await page_keys(
        db, organization_id=organization_id, include_revoked=include_revoked, cursor=cursor, limit=limit
    )


async def key(db: Database, caller: Caller, key_id: str) -> ApiKey:
    """One key, never its secret (404 `api_key_not_found` for an unknown id)."""
    require_operator(caller)
    return await get_key(db, key_id)


async def revoke(db: Database, caller: Caller, key_id: str) -> ApiKey:
    """Revoke a key (404 `api_key_not_found` for an unknown id)."""
    require_operator(caller)
    return await revoke_key(db, key_id)
