"""The scope every `/v1/` route declares: a FastAPI dependency that both marks the route and enforces it.

Three scopes, one per route (`undeclared_routes` names a route with none or two; the app refuses to build):

- `OPERATOR`: operator keys only (creating and listing organizations, cancelling a model switch, key
  management). An organization key answers 403 `operator_scope_required`.
- `ORGANIZATION` (and `organization_scope(max_files=…)` for a multipart route taking many files): work inside
  one organization. An organization key must name its own organization (422 `organization_required` when
  it names none) and only it, wherever the request can name one: the path, the query, the JSON body at any
  depth, a multipart field (403 `organization_forbidden` otherwise, whether or not the other organization
  exists); every `platform` value it sends must be false (403 `platform_forbidden`). Every value of a
  repeated parameter or key is checked, not only the one a parser keeps. The body checked is the one the
  route reads, parsed once by `functions.api._body` before this check runs; nothing here parses a body.
- `ANY_KEY`: any valid key, for routes that read no tenant's data (`/v1/memory/tools`, the publish check).

An operator may name any organization; an operator's request naming one that does not exist answers 404
`organization_not_found` before the route runs (an organization key's own organization always exists: its keys
are deleted with it). The routes that answer about an erasure (`ERASED_OPERATOR`,
`organization_scope(erased=True)`: repeating an organization erasure, reading receipts) also let an operator
name an organization whose row is gone when a completed erasure receipt exists for its id, so the route can
answer that receipt. The decisions are `functions.actions.scope`'s (the one scope check the console and the
CLI run too); this module finds where a request names an organization. The route receives the `Caller` where
it needs it (the brief route refuses an organization key's own policy). This module must never hold a business
rule beyond who may call what.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import Depends, Request
from fastapi.params import Depends as DependsParam
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.security import HTTPAuthorizationCredentials
from starlette.routing import BaseRoute

from functions._request import services
from functions.actions.scope import Caller, check_organization, forbidden, require_operator
from functions.api._auth import CALLER
from functions.api._body import FORM_LIMITS, parsed_body
from functions.api._http import bearer
from functions.errors import ApiError
from state.ids import UUID_RULE, is_canonical_uuid

__all__ = [
    "ANY_KEY",
    "ERASED_OPERATOR",
    "OPERATOR",
    "ORGANIZATION",
    "AnyCaller",
    "ErasedOperatorCaller",
    "OperatorCaller",
    "OrganizationCaller",
    "Scope",
    "organization_scope",
    "route_scopes",
    "undeclared_routes",
]

Scope = Literal["operator", "organization", "any"]
"""What a route lets a key do."""
_SCOPES: dict[Callable[..., Any], Scope] = {}
_FIELD = "organization_id"
_FALSE = frozenset({"", "0", "f", "false", "n", "no", "off"})
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


@dataclass
class _Named:
    """Every place a request names an organization or the platform."""

    organizations: list[tuple[tuple[str, ...], Any]] = field(default_factory=list)
    """Where a route reads one (its error path) and the value there: the path, the query, the body's top level
    or invocation, a form field."""
    nested: list[Any] = field(default_factory=list)
    """`organization_id` keys deeper in a JSON body."""
    platform: list[Any] = field(default_factory=list)
    """Every `platform` value, anywhere."""


def _caller(request: Request) -> Caller:
    caller = request.scope.get(CALLER)
    if not isinstance(caller, Caller):  # the edge authenticates every /v1/ request; fail closed without it
        raise ApiError(401, "auth_missing", "send 'Authorization: Bearer <key>'")
    return caller


def _walk(value: Any, named: _Named, depth: int = 0) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if depth > 0 and key == _FIELD:
                named.nested.append(item)
            _walk(item, named, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, named, depth + 1)


def _named(request: Request, *, deep: bool) -> _Named:
    """Where the request names an organization; with `deep`, also nested and repeated JSON keys.

    The body is the one the route reads (`functions.api._body.parsed_body`), never parsed here.
    """
    named = _Named()
    if _FIELD in request.path_params:
        named.organizations.append((("path", _FIELD), request.path_params[_FIELD]))
    named.organizations.extend((("query", _FIELD), v) for v in request.query_params.getlist(_FIELD))
    named.platform.extend(request.query_params.getlist("platform"))
    body = parsed_body(request)
    if body.kind == "form":
        named.organizations.extend((("body", _FIELD), v) for v in body.form.getlist(_FIELD))
        named.platform.extend(body.form.getlist("platform"))
    elif body.kind == "json":
        named.platform.extend(body.repeated.get("platform", ()))
        if deep:
            _walk(body.value, named)
            seen = body.repeated.get(_FIELD, [])
            if len(seen) > 1:
                named.nested.extend(seen)  # a repeated key: every value is checked, not only the last
        if isinstance(body.value, dict):
            if _FIELD in body.value:
                named.organizations.append((("body", _FIELD), body.value[_FIELD]))
            invocation = body.value.get("invocation")
            if isinstance(invocation, dict) and _FIELD in invocation:
                named.organizations.append((("body", "invocation", _FIELD), invocation[_FIELD]))
    return named


def _uuid(value: Any) -> UUID | None:
    if isinstance(value, UUID):
        return value
    if not isinstance(value, str):
        return None
    try:
        return UUID(value)
    except ValueError:
        return None


def _canonical(named: _Named) -> None:
    """422 `invalid_request` at the path of a UUID spelled other than canonically (a lenient route would take it)."""
    for loc, value in named.organizations:
        if isinstance(value, str) and _uuid(value) is not None and not is_canonical_uuid(value):
            details = [{"loc": list(loc), "msg": f"must be {UUID_RULE}", "type": "uuid_not_canonical"}]
            raise ApiError(422, "invalid_request", f"{'.'.join(loc)} must be {UUID_RULE}", details=details)


def _is_false(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().lower() in _FALSE)


def _bound(caller: Caller, named: _Named, *, required: bool) -> None:
    """Refuse an organization key's request that names the platform or any organization but its own."""
    if not all(_is_false(v) for v in named.platform):
        raise ApiError(403, "platform_forbidden", "an organization key cannot read or write the platform scope")
    for value in (*(v for _, v in named.organizations), *named.nested):
        organization_id = _uuid(value)
        if organization_id is None:
            raise ApiError(422, "invalid_request", "organization_id is not a UUID")
        if organization_id != caller.organization_id:
            raise forbidden()
    if required and not named.organizations:
        raise ApiError(422, "organization_required", "an organization key names its organization in organization_id")


async def _authorize(request: Request, scope: Scope, *, erased: bool = False) -> Caller:
    caller = _caller(request)
    if scope == "any":
        return caller
    if scope == "operator":
        require_operator(caller)
    named = _named(request, deep=not caller.operator)
    if not caller.operator:
        _bound(caller, named, required=True)  # another organization, however spelled, is 403 first
        _canonical(named)
        return caller
    _canonical(named)
    ids = list(dict.fromkeys(u for u in (_uuid(v) for _, v in named.organizations) if u is not None))
    if ids:
        svc = await services(request)
        for organization_id in ids:
            await check_organization(svc.db, caller, organization_id, erased=erased)
    return caller


async def operator_scope(request: Request, _: Credentials = None) -> Caller:
    """Scope `operator`: operator keys only."""
    return await _authorize(request, "operator")


async def erased_operator_scope(request: Request, _: Credentials = None) -> Caller:
    """Scope `operator`, for a route that also answers for an erased organization (its receipt)."""
    return await _authorize(request, "operator", erased=True)


async def any_key_scope(request: Request, _: Credentials = None) -> Caller:
    """Scope `any`: every valid key (the route reads no tenant's data)."""
    return await _authorize(request, "any")


def organization_scope(*, max_files: int = 1, erased: bool = False) -> DependsParam:
    """Scope `organization` for a route whose multipart body may carry up to `max_files` files.

    With `erased`, an operator may also name an erased organization (one with a completed erasure receipt).
    """

    async def organization_scoped(request: Request, _: Credentials = None) -> Caller:
        """Scope `organization`: an organization key inside its organization, or an operator."""
        return await _authorize(request, "organization", erased=erased)

    _SCOPES[organization_scoped] = "organization"
    FORM_LIMITS[organization_scoped] = max_files
    declared: DependsParam = Depends(organization_scoped)
    return declared


_SCOPES[operator_scope] = "operator"
_SCOPES[erased_operator_scope] = "operator"
_SCOPES[any_key_scope] = "any"

OPERATOR = Depends(operator_scope)
"""Declare scope `operator` (`dependencies=[OPERATOR]`)."""
ERASED_OPERATOR = Depends(erased_operator_scope)
"""Declare scope `operator` for a route that answers for an erased organization too."""
ORGANIZATION = organization_scope()
"""Declare scope `organization`."""
ANY_KEY = Depends(any_key_scope)
"""Declare scope `any`."""
OperatorCaller = Annotated[Caller, OPERATOR]
"""The caller of an operator route, as a route parameter (declares the scope)."""
ErasedOperatorCaller = Annotated[Caller, ERASED_OPERATOR]
"""The caller of an operator route that answers for an erased organization too (declares the scope)."""
OrganizationCaller = Annotated[Caller, ORGANIZATION]
"""The caller of an organization route, as a route parameter (declares the scope)."""
AnyCaller = Annotated[Caller, ANY_KEY]
"""The caller of an any-key route, as a route parameter (declares the scope)."""


def _declared(dependant: Any) -> Iterator[Scope]:
    for sub in dependant.dependencies:
        if sub.call in _SCOPES:
            yield _SCOPES[sub.call]
        yield from _declared(sub)


def route_scopes(routes: Sequence[BaseRoute]) -> dict[tuple[str, str], list[Scope]]:
    """Each `/v1/` route (method, path) with the scopes it declares (exactly one is right).

    Included routers are walked as FastAPI serves them, with their inclusion's dependencies. A route under
    `/v1/` that is not a FastAPI route (a mount, a bare Starlette route) declares none.
    """
    out: dict[tuple[str, str], list[Scope]] = {}
    for context in iter_route_contexts(routes):
        path = str(context.path or "")
        if path != "/v1" and not path.startswith("/v1/"):
            continue
        dependant = getattr(context, "dependant", None)
        if not isinstance(context.original_route, APIRoute) or dependant is None:
            out[("*", path)] = []
            continue
        for method in sorted(context.methods or ()):
            out[(method, path)] = list(dict.fromkeys(_declared(dependant)))
    return out


def undeclared_routes(routes: Sequence[BaseRoute]) -> list[str]:
    """The `/v1/` routes that declare no scope, or more than one, as `METHOD /path`."""
    return [f"{m} {p}" for (m, p), scopes in route_scopes(routes).items() if len(scopes) != 1]
