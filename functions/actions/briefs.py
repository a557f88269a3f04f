"""Build a front door brief for one turn: the act behind `POST /v1/context/briefs` and the console's brief page.

A front door turn builds with `ContextSubject.of_actor` under the fixed `front_door` policy; another policy
is an operator's option (an organization key that sends one answers 403 `policy_forbidden` before anything
is read) and passes the publish check of the process registry first. The entities pass through
`state.refs.normalize_refs`: a malformed one is dropped and listed, or, with `strict_entities`, refused with
422 `invalid_entity_ref` naming every dropped position before any source is read. This module must never
write prose into a brief or change a policy: the builder and the registry do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from context.models import BriefExplanation, ContextBrief, ContextRequest, ContextSubject
from context.policies import FRONT_DOOR, FRONT_DOOR_NAME
from functions._brief_receipts import FACES, receipt_of
from functions._briefs import build_brief, build_explained_brief
from functions._services import Services
from functions.actions.scope import Caller, require_own
from functions.errors import ApiError
from state.refs import DroppedRef, normalize_refs

__all__ = ["FrontDoorBrief", "front_door_brief"]


@dataclass(frozen=True, slots=True)
class FrontDoorBrief:
    """A turn's brief, the policy it was built under, and the entities dropped from the request."""

    policy: str
    """`front_door`, or `caller` for an operator's policy."""
    brief: ContextBrief
    """The brief."""
    dropped: list[DroppedRef] = field(default_factory=list)
    """The entities that could not name a row, with their positions."""
    explanation: BriefExplanation | None = None
    """Why each item is in the brief, when asked."""


async def front_door_brief(
    services: Services,
    caller: Caller,
    organization_id: UUID,
    *,
    user_id: UUID | None = None,
    query: str = "",
    entities: list[Any] | None = None,
    strict_entities: bool = False,
    conversation_id: UUID | None = None,
    policy: object | None = None,
    explain: bool = False,
    route: str = "front_door",
) -> FrontDoorBrief:
    """Build the brief of one front door turn (see the module for the refusals); `route` labels its metrics."""
    require_own(caller, organization_id)
    if policy is not None and not caller.operator:
        raise ApiError(403, "policy_forbidden", "an organization key builds under the front_door policy; omit policy")
    published = FRONT_DOOR if policy is None else services.registry.publish(policy)
    normalized = normalize_refs(entities or [], source="front door body")
    dropped = list(normalized.dropped)
    if dropped and strict_entities:
        raise ApiError(
            422,
            "invalid_entity_ref",
            f"{len(dropped)} entit{'y' if len(dropped) == 1 else 'ies'} cannot name a row (kind and id must each "
            "form a subject key part: non-blank text without ':' or a null byte)",
            details=[{"loc": ["entities", d.position], "reason": d.reason} for d in dropped],
        )
    request = ContextRequest(
        subject=ContextSubject.of_actor(organization_id, user_id),
        query=query,
        entities=normalized.refs,
        run_id=None,
        conversation_id=conversation_id,
    )
    name = FRONT_DOOR_NAME if policy is None else "caller"
    explanation = None
    if explain:
        brief, explanation = await build_explained_brief(
            services.builder, request, published, metrics=services.metrics, route=route
        )
    else:
        brief = await build_brief(services.builder, request, published, metrics=services.metrics, route=route)
    if dropped:
        brief = brief.model_copy(update={"dropped_entities": len(dropped)})
    services.receipts.record(  # queued: written after the answer, off the brief's path
        receipt_of(
            brief, organization_id=organization_id, face=FACES.get(route, "http"), kind="front_door", policy=name
        )
    )
    return FrontDoorBrief(name, brief, dropped, explanation)
