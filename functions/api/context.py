"""`/v1/context/…`: the front door brief, the dossier as the model reads it, and the policy publish check.

A front door turn builds with `ContextSubject.of_actor` (no run, no trigger, no definition) under the fixed
`front_door` policy; it never mints a principal. Building under another policy is an operator's option, not
the front door: an organization key that sends a `policy` answers 403 `policy_forbidden` before anything
is read. An operator's policy passes the publish check of the process registry before any source is read,
and a policy that fails answers 422 `policy_invalid` with every problem and its path. A required source
failure answers 503 with the names.

The entities of a turn pass through `state.refs.normalize_refs`, the one run-input normalizer: a malformed
entry (an id such as `urn:uuid:…` that cannot form a subject key included) is dropped, logged with its
position, counted in `brief.dropped_entities` and listed in the answer's `dropped_entities`, and the brief
is built from the valid ones. A caller that prefers a refusal sends `strict_entities: true` and gets 422
`invalid_entity_ref` with every dropped position instead, before any source is read.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from context.errors import PolicyPublishError
from context.models import BriefExplanation, ContextBrief
from context.sources.dossier import dossier_facts, read_dossier, render_dossier_text
from functions._wire import CleanJson, CleanText
from functions.actions.briefs import front_door_brief
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._scopes import ANY_KEY, ORGANIZATION, OrganizationCaller
from functions.errors import ApiError
from memory.errors import WorkflowMemoryToolError
from memory.tools import check_workflow_tool_nodes

__all__ = [
    "BriefIn",
    "BriefOut",
    "DefinitionIn",
    "DossierFactOut",
    "DossierOut",
    "DroppedEntityOut",
    "PolicyIn",
    "PolicyValidOut",
    "router",
]

router = APIRouter(prefix="/v1/context", tags=["context"], responses=ERROR_RESPONSES, route_class=BodyRoute)


class BriefIn(BaseModel):
    """A front door turn: who asks, what they said, the rows in scope, and optionally a policy."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    organization_id: UUID
    """The actor's organization."""
    user_id: UUID | None = None
    """The actor."""
    query: CleanText = Field(default="", max_length=20_000)
    """What the person said."""
    entities: list[Any] = Field(default_factory=list, max_length=500)
    """Rows already in scope of the turn, as `{kind, id, label?}`; a malformed entry is dropped, not fatal."""
    strict_entities: bool = Field(default=False, strict=True)
    """Refuse the turn (422 `invalid_entity_ref`) instead of dropping a malformed entity."""
    conversation_id: UUID | None = None
    """The conversation of the turn."""
    policy: CleanJson | None = None
    """An operator's policy to build under instead of `front_door` (it must pass the publish check); an
    organization key sending one answers 403 `policy_forbidden`."""
    explain: bool = Field(default=False, strict=True)
    """Also answer why each item the packer was given was kept or dropped (computed in the same pack)."""


class DroppedEntityOut(BaseModel):
    """One malformed entity of the body, dropped before the build."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    position: int
    """Its index in `entities`."""
    reason: str
    """What is wrong with it."""


class BriefOut(BaseModel):
    """The brief and the policy it was built under."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    policy: str
    """`front_door`, or `caller` for a caller-supplied policy."""
    brief: ContextBrief
    """The packed brief with its accounting."""
    dropped_entities: list[DroppedEntityOut] = Field(default_factory=list)
    """The malformed entities dropped from the body, in order (their count is `brief.dropped_entities`)."""

    explanation: BriefExplanation | None = None
    """With `explain: true`: one entry per item the packer was given, and each source's spend."""


class DossierFactOut(BaseModel):
    """One fact of the dossier."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    title: str
    """What the fact is about."""
    body: str
    """The fact, as the model reads it."""


class DossierOut(BaseModel):
    """The Company dossier of an organization exactly as the model reads it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    organization_id: UUID
    """The organization."""
    text: str
    """The dossier as one text, one line per fact."""
    facts: list[DossierFactOut]
    """The same facts, one entry each, in order."""


class PolicyValidOut(BaseModel):
    """A policy that passed the publish check."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    valid: bool
    """Always true: a policy that fails answers 422 `policy_invalid` instead."""
    policy: dict[str, Any]
    """The normalised policy (defaults filled in), as it would be published."""


class DefinitionIn(BaseModel):
    """The definition a policy is published with: its kind and the tool each of its tool nodes calls."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: CleanText = Field(min_length=1, max_length=64)
    """`agent`, `workflow` or `skill`; only an agent may call a memory tool."""
    tool_nodes: list[CleanText] = Field(default_factory=list, max_length=1000)
    """The tool name of each tool node, in node order."""


class PolicyIn(BaseModel):
    """A policy to run the publish check on, and optionally the definition it is published with."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    policy: CleanJson
    """The policy as JSON."""
    definition: DefinitionIn | None = None
    """When given, its tool nodes pass the workflow-node check (no memory tool outside an agent)."""


def _node_problems(exc: WorkflowMemoryToolError) -> list[dict[str, Any]]:
    """The refused tool nodes as publish problems, each with its path."""
    msg = "a {} node cannot call {}; only an agent definition owns memory"
    return [
        {"loc": ["definition", "tool_nodes", i], "msg": msg.format(exc.definition_kind, name), "type": exc.code}
        for i, name in exc.nodes
    ]


_ORG_404 = "`organization_not_found`: the organization the request names does not exist."


@router.post(
    "/briefs",
    response_model=BriefOut,
    responses=route_errors({
        400: None,
        404: _ORG_404,
        422: "`invalid_request`, `policy_invalid` (every problem with its path), or `invalid_entity_ref` "
        "(with `strict_entities`).",
    }),
)  # fmt: skip
async def create_brief(body: BriefIn, svc: ServicesDep, caller: OrganizationCaller) -> BriefOut:
    """Build a front door brief for one turn (under `front_door`, or an operator's policy)."""
    built = await front_door_brief(
        svc, caller, body.organization_id, user_id=body.user_id, query=body.query, entities=body.entities,
        strict_entities=body.strict_entities, conversation_id=body.conversation_id, policy=body.policy,
        explain=body.explain,
    )  # fmt: skip
    dropped = [DroppedEntityOut(position=d.position, reason=d.reason) for d in built.dropped]
    return BriefOut(policy=built.policy, brief=built.brief, dropped_entities=dropped, explanation=built.explanation)


@router.get("/dossier", dependencies=[ORGANIZATION], response_model=DossierOut, responses=route_errors({404: _ORG_404}))
async def get_dossier(
    svc: ServicesDep,
    organization_id: Annotated[UUID, Query(description="The organization whose dossier it is.")],
    user_id: Annotated[UUID | None, Query(description="The person asking, for the user facts.")] = None,
    include_user: Annotated[bool, Query(description="Add the facts about `user_id`.")] = False,
    include_documents: Annotated[bool, Query(description="Add the organization's document titles.")] = True,
    document_limit: Annotated[int, Query(ge=0, le=999, description="The most document titles to list.")] = 20,
) -> dict[str, Any]:
    """The Company dossier exactly as the model reads it: the same facts, one line each."""
    dossier = await svc.db.on_standby(
        organization_id,
        lambda: read_dossier(
            svc.db,
            organization_id,
            user_id=user_id,
            include_user=include_user,
            include_documents=include_documents,
            document_limit=document_limit,
        ),
    )
    return {
        "organization_id": str(organization_id),
        "text": render_dossier_text(dossier),
        "facts": [{"title": f.title, "body": f.body} for f in dossier_facts(dossier)],
    }


@router.post(
    "/policies/validate",
    dependencies=[ANY_KEY],
    response_model=PolicyValidOut,
    responses=route_errors({
        400: None,
        422: "`policy_invalid` (every problem with its path) or `memory_tool_in_workflow` (each node with its path).",
    }),
)  # fmt: skip
async def validate_policy(body: PolicyIn, svc: ServicesDep) -> dict[str, Any]:
    """The publish check: 200 with the normalised policy, or 422 `policy_invalid` listing every problem.

    With a `definition`, its tool nodes also pass the workflow-node check: a workflow or skill node calling
    `memory.remember` or `memory.forget` answers 422 `memory_tool_in_workflow`, each node with its path (and
    its problems join the list of a policy that fails too).
    """
    refused: WorkflowMemoryToolError | None = None
    if body.definition is not None:
        try:
            check_workflow_tool_nodes(body.definition.kind, body.definition.tool_nodes)
        except WorkflowMemoryToolError as exc:
            refused = exc
    try:
        policy = svc.registry.publish(body.policy)
    except PolicyPublishError as exc:
        if refused is None:
            raise
        problems = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors]
        raise ApiError(422, exc.code, str(exc), details=[*problems, *_node_problems(refused)]) from exc
    if refused is not None:
        raise ApiError(422, refused.code, str(refused), details=_node_problems(refused)) from refused
    return {"valid": True, "policy": policy.model_dump(mode="json")}
