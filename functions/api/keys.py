"""`/v1/keys`: mint, list and revoke API keys, for an operator.

`POST` mints a key (`scope: operator`, or `scope: organization` with its `organization_id`) and answers its
secret once: only its SHA-256 is stored. `GET` lists keys without secrets; `DELETE /v1/keys/{id}` revokes
one (idempotent), refused from the next request on. Every route is operator-scoped. This module must never
log or answer a secret except in the one answer that mints it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field, model_validator

from functions._wire import CleanText, key_json
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES
from functions.api._scopes import OPERATOR
from state.api_keys import KEY_ID_PATTERN, MAX_KEY_NAME, list_keys, mint_key, revoke_key

__all__ = ["KeyIn", "key_json", "router"]

router = APIRouter(prefix="/v1/keys", tags=["keys"], responses=ERROR_RESPONSES)


class KeyIn(BaseModel):
    """A key to mint."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    scope: Literal["operator", "organization"]
    """`organization`: bound to `organization_id`; `operator`: everything, including key management."""
    organization_id: UUID | None = None
    """The organization of an organization key; omit it for an operator key."""
    name: CleanText = Field(default="", max_length=MAX_KEY_NAME)
    """A label for people (who holds the key)."""

    @model_validator(mode="after")
    def _scope_matches(self) -> KeyIn:
        if (self.scope == "organization") != (self.organization_id is not None):
            raise ValueError("an organization key names its organization_id; an operator key names none")
        return self


@router.post("", status_code=201, dependencies=[OPERATOR])
async def mint(body: KeyIn, svc: ServicesDep) -> dict[str, Any]:
    """Mint a key and answer it with its secret, the only time the secret is shown."""
    minted = await mint_key(svc.db, organization_id=body.organization_id, name=body.name)
    return {**key_json(minted.key), "secret": minted.secret}


@router.get("", dependencies=[OPERATOR])
async def list_all(
    svc: ServicesDep,
    organization_id: UUID | None = None,
    include_revoked: bool = True,
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
) -> dict[str, Any]:
    """The keys (of one organization, or all), oldest first, never their secrets."""
    keys = await list_keys(svc.db, organization_id=organization_id, include_revoked=include_revoked, limit=limit)
    return {"keys": [key_json(k) for k in keys]}


@router.delete("/{key_id}", dependencies=[OPERATOR])
async def revoke(svc: ServicesDep, key_id: Annotated[str, Path(pattern=KEY_ID_PATTERN)]) -> dict[str, Any]:
    """Revoke a key: refused from its next request on (404 `api_key_not_found` for an unknown id)."""
    return key_json(await revoke_key(svc.db, key_id))
