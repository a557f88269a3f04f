"""`/v1/keys`: mint, list and revoke API keys, for an operator.

`POST` mints a key (`scope: operator`, or `scope: organization` with its `organization_id`) and answers its
secret once: only its SHA-256 is stored. `GET` lists keys without secrets; `DELETE /v1/keys/{id}` revokes
one (idempotent), refused from the next request on. The list pages by cursor (`functions.api._pages`).
Every route is operator-scoped. This module must never log or answer a secret except in the one answer
that mints it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field, model_validator

from functions._wire import CleanText, key_json
from functions.actions import keys
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._pages import CURSOR_ERRORS, CursorQuery, PageOut, limit_query, page_body
from functions.api._params import ListedOrganization
from functions.api._scopes import OperatorCaller
from state.api_keys import KEY_ID_PATTERN, MAX_KEY_NAME

__all__ = ["KeyIn", "KeyList", "KeyOut", "MintedKeyOut", "key_json", "router"]

router = APIRouter(prefix="/v1/keys", tags=["keys"], responses=ERROR_RESPONSES, route_class=BodyRoute)


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


class KeyOut(BaseModel):
    """An API key, without its secret."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: str
    """The key's id, the `<id>` of `ack_<id>_<secret>`."""
    scope: Literal["operator", "organization"]
    """What it may do: everything (`operator`) or work in its one organization."""
    organization_id: UUID | None
    """The organization of an organization key; null for an operator key."""
    name: str
    """Its label for people."""
    created_at: str
    """When it was minted (ISO 8601)."""
    revoked_at: str | None
    """When it was revoked (ISO 8601), or null while it works."""


class MintedKeyOut(KeyOut):
    """A key just minted, with its secret."""

    secret: str
    """The whole bearer value `ack_<id>_<secret>`, shown this once: only its SHA-256 is stored."""


class KeyList(PageOut):
    """A page of keys, oldest first, never their secrets."""

    items: list[KeyOut]
    """At most `limit` keys."""
    keys: list[KeyOut]
    """The same rows as `items` (the key this list answered before it paged), for older callers."""


@router.post(
    "",
    status_code=201,
    response_model=MintedKeyOut,
    responses=route_errors(
        {
            400: None,
            404: "`organization_not_found`: the key's organization does not exist.",
            409: "`organization_erasing`: the organization is being erased.",
        }
    ),
)
async def mint(body: KeyIn, svc: ServicesDep, caller: OperatorCaller) -> dict[str, Any]:
    """Mint a key and answer it with its secret, the only time the secret is shown."""
    minted = await keys.mint(svc.db, caller, organization_id=body.organization_id, name=body.name)
    return {**key_json(minted.key), "secret": minted.secret}


@router.get("", response_model=KeyList, responses=route_errors({422: CURSOR_ERRORS}))
async def list_all(
    svc: ServicesDep,
    caller: OperatorCaller,
    organization_id: ListedOrganization = None,
    include_revoked: Annotated[bool, Query(description="Also list revoked keys.")] = True,
    cursor: CursorQuery = None,
    limit: Annotated[int, limit_query("keys")] = 1000,
) -> dict[str, Any]:
    """A page of keys (of one organization, or all), oldest first, never their secrets."""
    page = await keys.keys_page(
        svc.db, caller, organization_id=organization_id, include_revoked=include_revoked, cursor=cursor, limit=limit
    )
    return page_body(page, [key_json(k) for k in page.items], legacy="keys")


@router.delete(
    "/{key_id}",
    response_model=KeyOut,
    responses=route_errors({404: "`api_key_not_found`: no key has this id."}),
)
async def revoke(
    svc: ServicesDep,
    caller: OperatorCaller,
    key_id: Annotated[str, Path(pattern=KEY_ID_PATTERN, description="The key's id.")],
) -> dict[str, Any]:
    """Revoke a key: refused from its next request on (404 `api_key_not_found` for an unknown id)."""
    return key_json(await keys.revoke(svc.db, caller, key_id))
