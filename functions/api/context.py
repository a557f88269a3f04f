"""`/v1/context/…`: the front door brief, the dossier as the model reads it, and the policy publish check.

A front door turn builds with `ContextSubject.of_actor` (no run, no trigger, no definition) under the fixed
`front_door` policy; it never mints a principal. A caller may send its own policy instead: it passes the
publish check of the process registry before any source is read, and a policy that fails answers 422
`policy_invalid` with every problem and its path. A required source failure answers 503 with the names.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from context.models import BriefExplanation, ContextBrief, ContextRequest, ContextSubject
from context.policies import FRONT_DOOR, FRONT_DOOR_NAME
from context.sources.dossier import dossier_facts, read_dossier, render_dossier_text
from functions._briefs import build_brief, build_explained_brief
from functions.api._deps import ServicesDep
from functions.api._http import require_token
from state.refs import ResourceRef

__all__ = ["BriefIn", "BriefOut", "PolicyIn", "router"]

router = APIRouter(prefix="/v1/context", tags=["context"], dependencies=[Depends(require_token)])


class BriefIn(BaseModel):
    """A front door turn: who asks, what they said, the rows in scope, and optionally a policy."""

    model_config = ConfigDict(extra="forbid")

    organization_id: UUID
    """The actor's organization."""
    user_id: UUID | None = None
    """The actor."""
    query: str = Field(default="", max_length=20_000)
    """What the person said."""
    entities: list[ResourceRef] = Field(default_factory=list, max_length=500)
    """Rows already in scope of the turn."""
    conversation_id: UUID | None = None
    """The conversation of the turn."""
    policy: dict[str, Any] | None = None
    """A policy to build under instead of `front_door`; it must pass the publish check."""
    explain: bool = False
    """Also answer why each item the packer was given was kept or dropped (computed in the same pack)."""


class BriefOut(BaseModel):
    """The brief and the policy it was built under."""

    policy: str
    """`front_door`, or `caller` for a caller-supplied policy."""
    brief: ContextBrief
    """The packed brief with its accounting."""
    explanation: BriefExplanation | None = None
    """With `explain: true`: one entry per item the packer was given, and each source's spend."""


class PolicyIn(BaseModel):
    """A policy to run the publish check on."""

    model_config = ConfigDict(extra="forbid")

    policy: dict[str, Any]
    """The policy as JSON."""


@router.post("/briefs", response_model=BriefOut)
async def create_brief(body: BriefIn, svc: ServicesDep) -> BriefOut:
    """Build a front door brief for one turn."""
    policy = FRONT_DOOR if body.policy is None else svc.registry.publish(body.policy)
    request = ContextRequest(
        subject=ContextSubject.of_actor(body.organization_id, body.user_id),
        query=body.query,
        entities=list(body.entities),
        run_id=None,
        conversation_id=body.conversation_id,
    )
    name = FRONT_DOOR_NAME if body.policy is None else "caller"
    if body.explain:
        brief, explanation = await build_explained_brief(
            svc.builder, request, policy, metrics=svc.metrics, route="front_door"
        )
        return BriefOut(policy=name, brief=brief, explanation=explanation)
    brief = await build_brief(svc.builder, request, policy, metrics=svc.metrics, route="front_door")
    return BriefOut(policy=name, brief=brief)


@router.get("/dossier")
async def get_dossier(
    svc: ServicesDep,
    organization_id: UUID,
    user_id: UUID | None = None,
    include_user: bool = False,
    include_documents: bool = True,
    document_limit: Annotated[int, Query(ge=0, le=999)] = 20,
) -> dict[str, Any]:
    """The Company dossier exactly as the model reads it: the same facts, one line each."""
    dossier = await read_dossier(
        svc.db,
        organization_id,
        user_id=user_id,
        include_user=include_user,
        include_documents=include_documents,
        document_limit=document_limit,
    )
    return {
        "organization_id": str(organization_id),
        "text": render_dossier_text(dossier),
        "facts": [{"title": f.title, "body": f.body} for f in dossier_facts(dossier)],
    }


@router.post("/policies/validate")
async def validate_policy(body: PolicyIn, svc: ServicesDep) -> dict[str, Any]:
    """The publish check: 200 with the normalised policy, or 422 `policy_invalid` listing every problem."""
    policy = svc.registry.publish(body.policy)
    return {"valid": True, "policy": policy.model_dump(mode="json")}
