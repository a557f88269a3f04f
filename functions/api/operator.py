"""`/v1/knowledge/switch`: the running model switch of a scope, and its cancel.

`GET /v1/knowledge/switch` answers the running switchover of a scope (an organization, or the platform
default with `platform=true`), how far it is and what its flip waits for (`phase`, `waiting_for`);
`DELETE` cancels it: the old model stays live, the new model's chunks nothing needs are deleted (writes in
flight under it land first, none after), ingestion builds the live model only again, a re-embed still
running stops at its next batch, and the run of the switch ends `knowledge_switch_cancelled`.
(One source's routes, `GET /v1/knowledge/sources/{id}` included, are `functions.api.source`.) This module must
never flip a model or change a source.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter

from functions._switch_view import switch_view
from functions.actions.switch import cancel_switch
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._knowledge_models import SwitchCancelOut, SwitchOut
from functions.api._params import PlatformScope, ScopeOrganization
from functions.api._scopes import ORGANIZATION, OperatorCaller
from functions.errors import ApiError

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/knowledge", tags=["knowledge operations"], responses=ERROR_RESPONSES, route_class=BodyRoute
)


def _scope(organization_id: UUID | None, platform: bool) -> UUID | None:
    if platform and organization_id is not None:
        raise ApiError(422, "scope_ambiguous", "send organization_id or platform=true, not both")
    if not platform and organization_id is None:
        raise ApiError(422, "scope_required", "send organization_id, or platform=true for the platform default")
    return organization_id


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
