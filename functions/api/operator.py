"""`/v1/knowledge/switch` and `/v1/knowledge/sources/{id}`: what an operator needs when knowledge misbehaves.

`GET /v1/knowledge/switch` answers the running switchover of a scope (an organization, or the platform
default with `platform=true`), how far it is and what its flip waits for (`phase`, `waiting_for`);
`DELETE` cancels it: the old model stays live, the new model's chunks nothing needs are deleted (writes in
flight under it land first, none after), ingestion builds the live model only again, a re-embed still
running stops at its next batch, and the run of the switch ends `knowledge_switch_cancelled`.
`GET /v1/knowledge/sources/{id}` answers one source with its status, reason, pending age and its readiness
and chunk counts per model. This module must never flip a model or change a source.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from fastapi import APIRouter

from functions._switch_view import switch_view
from functions.actions.switch import cancel_switch
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._knowledge_models import SourceDetailOut, SwitchCancelOut, SwitchOut
from functions.api._params import PlatformScope, ScopeOrganization, SourceIdPath
from functions.api._scopes import ORGANIZATION, OperatorCaller
from functions.errors import ApiError
from knowledge.db_errors import SourceNotFoundError
from knowledge.ingestion.sources import ModelReadiness, SourceView, get_source, model_readiness

__all__ = ["readiness_json", "router", "source_json"]

router = APIRouter(
    prefix="/v1/knowledge", tags=["knowledge operations"], responses=ERROR_RESPONSES, route_class=BodyRoute
)


def _scope(organization_id: UUID | None, platform: bool) -> UUID | None:
    if platform and organization_id is not None:
        raise ApiError(422, "scope_ambiguous", "send organization_id or platform=true, not both")
    if not platform and organization_id is None:
        raise ApiError(422, "scope_required", "send organization_id, or platform=true for the platform default")
    return organization_id


def _age_s(since: datetime | None) -> float | None:
    return None if since is None else round((datetime.now(UTC) - since).total_seconds(), 1)


def readiness_json(r: ModelReadiness) -> dict[str, Any]:
    """One source's readiness under one model, as JSON."""
    return {
        "model": r.model,
        "status": r.status,
        "chunks": r.chunk_count,
        "embedded": r.embedded_count,
        "failure_reason": r.failure_reason,
        "pending_age_s": _age_s(r.pending_since) if r.status == "pending" else None,
    }


def source_json(v: SourceView, models: list[ModelReadiness]) -> dict[str, Any]:
    """A source with its readiness per model, as JSON."""
    return {
        **v.identity_json(),
        "pending_age_s": _age_s(v.pending_since) if v.status == "pending" else None,
        "updated_at": v.updated_at.isoformat(),
        "models": [readiness_json(m) for m in models],
    }


_ORG_404 = "`organization_not_found`: the organization the request names does not exist."


@router.get(
    "/switch",
    dependencies=[ORGANIZATION],
    response_model=SwitchOut,
    response_model_exclude_unset=True,
    responses=route_errors({404: _ORG_404}),
)
async def get_switch(
    svc: ServicesDep, organization_id: ScopeOrganization = None, platform: PlatformScope = False
) -> dict[str, Any]:
    """The running switchover of a scope, how far it is and what its flip waits for, or `running: false`."""
    return await switch_view(svc.db, _scope(organization_id, platform))


@router.delete("/switch", response_model=SwitchCancelOut)
async def delete_switch(
    svc: ServicesDep, caller: OperatorCaller, organization_id: ScopeOrganization = None, platform: PlatformScope = False
) -> dict[str, Any]:
    """Cancel the running switchover of a scope; the old model stays live (`cancelled: false` if none runs)."""
    done = await cancel_switch(svc, caller, _scope(organization_id, platform))
    return {
        "organization_id": None if done.organization_id is None else str(done.organization_id),
        "cancelled": done.cancelled,
        "to_model": done.to_model,
        "dropped_chunks": done.dropped_chunks,
        "live_model": done.live_model,
    }


@router.get(
    "/sources/{source_id}",
    dependencies=[ORGANIZATION],
    response_model=SourceDetailOut,
    responses=route_errors({404: f"`knowledge_source_not_found`: no such source in this scope. Or {_ORG_404}"}),
)
async def get_one_source(
    svc: ServicesDep,
    source_id: SourceIdPath,
    organization_id: ScopeOrganization = None,
    platform: PlatformScope = False,
) -> dict[str, Any]:
    """One source of a scope with its status, reason, pending age, and its readiness per model."""
    scope = _scope(organization_id, platform)
    view = await get_source(svc.db, source_id)
    if view.organization_id != scope:
        raise SourceNotFoundError(f"no knowledge source {source_id} in this scope")
    return source_json(view, await model_readiness(svc.db, [source_id]))
