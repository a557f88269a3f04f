"""`/v1/organizations/{organization_id}/users|agents|runs`: the users, agent definitions and runs of an organization.

A deployment without the platform (or a platform registering them here) adds the rows a memory write and a
person's erasure name: members (`users`), agent definitions (`agents`, kind `agent`) and runs of an agent for a
member (`runs`), whose ids the memory tools' invocation carries. Organization scope: an organization key names
its own organization only (403 `organization_forbidden`), an operator any that exists (404
`organization_not_found`); an id in the path that is not canonical UUID text is 422 `invalid_request` naming it.
A user whose memories remain is removed only after the person's erasure (409 `user_has_memories`); a definition
that owns memories or runs is archived, never removed (409 `agent_in_use`). Every refusal and its code is
`functions.actions.appstate`'s. This module must never write a row except through that module.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from functions._wire import CleanText
from functions.actions import appstate
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._scopes import OrganizationCaller
from state.agents import MAX_AGENT_NAME
from state.ids import CanonicalUuid, OrganizationId
from state.users import MAX_DISPLAY_NAME, MAX_EMAIL

__all__ = [
    "AgentIn",
    "AgentList",
    "AgentOut",
    "AgentStatusIn",
    "RemovedOut",
    "RunFinishIn",
    "RunIn",
    "RunList",
    "RunOut",
    "UserIn",
    "UserList",
    "UserOut",
    "router",
]

router = APIRouter(
    prefix="/v1/organizations/{organization_id}",
    tags=["users and agents"],
    responses=ERROR_RESPONSES,
    route_class=BodyRoute,
)

OrgPath = Annotated[OrganizationId, Path(description="The organization's id.")]
_NO_ORG = "`organization_not_found`"


def _errors(extra: dict[int, str | None], *, body: bool = False) -> dict[int | str, dict[str, Any]]:
    """The route's errors: 404 always names the unknown organization, 400 where it reads a body."""
    found = extra.get(404)
    merged = {**extra, 404: _NO_ORG + ("" if found is None else ", or " + found)}
    return route_errors({400: None, **merged} if body else merged)


LimitQuery = Annotated[int, Query(ge=1, le=appstate.MAX_LIST, description="The most rows answered.")]


class UserIn(BaseModel):
    """A new member of the organization."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    email: CleanText = Field(max_length=MAX_EMAIL)
    """Its email (name@domain.tld), unique in the organization in any case (409 `user_email_taken`)."""
    display_name: CleanText | None = Field(default=None, max_length=MAX_DISPLAY_NAME)
    """How it is shown."""


class UserOut(BaseModel):
    """A member of the organization."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: str
    """Its id: `user_id` of a memory invocation, a run, a brief and a person's erasure."""
    organization_id: str
    """Its organization."""
    email: str
    """Its email."""
    display_name: str | None
    """How it is shown."""
    created_at: str
    """When it was added (ISO 8601)."""
    memories: int
    """Memory revisions its user-scope memories hold (tombstones included)."""
    runs: int
    """Runs started for it."""


class UserList(BaseModel):
    """The organization's users, oldest first."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    items: list[UserOut]
    """At most `limit` users."""
    total: int
    """How many users the organization has."""


class AgentIn(BaseModel):
    """A new agent definition of the organization."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: CleanText = Field(min_length=1, max_length=MAX_AGENT_NAME)
    """Its name, unique in the organization in any case (409 `agent_name_taken`)."""
    status: Literal["draft", "published", "archived"] = "published"
    """Its status; an archived agent starts no run."""


class AgentStatusIn(BaseModel):
    """A definition's new status."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    status: Literal["draft", "published", "archived"]
    """`archived` retires an agent that owns memories or runs (they stay)."""


class AgentOut(BaseModel):
    """An agent definition."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: str
    """Its id: `definition_id` of a memory invocation."""
    organization_id: str | None
    """Its organization (null for a platform template)."""
    kind: str
    """`agent` (only an agent owns memory)."""
    name: str
    """Its name."""
    status: str
    """`draft`, `published` or `archived`."""
    created_at: str
    """When it was added (ISO 8601)."""
    memories: int
    """Memory revisions it owns (tombstones included)."""
    runs: int
    """Its runs."""


class AgentList(BaseModel):
    """The organization's own agent definitions, oldest first."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    items: list[AgentOut]
    """At most `limit` definitions."""
    total: int
    """How many definitions the organization owns."""


class RunIn(BaseModel):
    """Start a run of an agent for a member, for memory writes."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    agent_id: CanonicalUuid
    """The agent definition (the organization's own or a platform template, not archived)."""
    user_id: CanonicalUuid
    """The member the run acts for."""


class RunFinishIn(BaseModel):
    """End a run."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    status: Literal["succeeded", "failed", "cancelled"] = "succeeded"
    """How it ended."""


class RunOut(BaseModel):
    """A run."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: str
    """Its id: `run_id` of a memory invocation."""
    organization_id: str
    """Its organization."""
    definition_id: str | None
    """The agent it runs."""
    user_id: str | None
    """The member it acts for (null once that user was removed)."""
    status: str
    """`running`, or how it ended."""
    created_at: str
    """When it started (ISO 8601)."""
    updated_at: str
    """When its status last changed (ISO 8601)."""


class RunList(BaseModel):
    """The organization's runs, newest first."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    items: list[RunOut]
    """At most `limit` runs."""


class RemovedOut(BaseModel):
    """What a removal removed."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: str
    """The removed row's id."""
    removed: bool
    """Always true."""


@router.post(
    "/users",
    status_code=201,
    response_model=UserOut,
    responses=_errors(
        {409: "`user_email_taken`.", 422: "`invalid_request`, or `user_email_invalid` (not name@domain.tld)."},
        body=True,
    ),
)
async def add_user(organization_id: OrgPath, body: UserIn, svc: ServicesDep, caller: OrganizationCaller) -> Any:
    """Add a member of the organization."""
    user = await appstate.add_user(svc.db, caller, organization_id, email=body.email, display_name=body.display_name)
    return user.as_json()


@router.get("/users", response_model=UserList, responses=_errors({}))
async def list_users(
    organization_id: OrgPath, svc: ServicesDep, caller: OrganizationCaller, limit: LimitQuery = 100
) -> dict[str, Any]:
    """The organization's users, oldest first, with their memory revisions and runs."""
    rows, total = await appstate.list_users(svc.db, caller, organization_id, limit=limit)
    return {"items": [u.as_json() for u in rows], "total": total}


@router.delete(
    "/users/{user_id}",
    response_model=RemovedOut,
    responses=_errors(
        {404: "`user_not_found`.", 409: "`user_has_memories`: erase the person first (`POST /v1/erasures/users`)."}
    ),
)
async def remove_user(
    organization_id: OrgPath,
    user_id: Annotated[CanonicalUuid, Path(description="The user's id.")],
    svc: ServicesDep,
    caller: OrganizationCaller,
) -> dict[str, Any]:
    """Remove a member who holds no memory (409 `user_has_memories` otherwise)."""
    await appstate.remove_user(svc.db, caller, organization_id, user_id)
    return {"id": str(user_id), "removed": True}


@router.post(
    "/agents",
    status_code=201,
    response_model=AgentOut,
    responses=_errors({409: "`agent_name_taken`."}, body=True),
)
async def add_agent(organization_id: OrgPath, body: AgentIn, svc: ServicesDep, caller: OrganizationCaller) -> Any:
    """Add an agent definition of the organization."""
    added = await appstate.add_agent(svc.db, caller, organization_id, name=body.name, status=body.status)
    return added.as_json()


@router.get("/agents", response_model=AgentList, responses=_errors({}))
async def list_agents(
    organization_id: OrgPath, svc: ServicesDep, caller: OrganizationCaller, limit: LimitQuery = 100
) -> dict[str, Any]:
    """The organization's own agent definitions, oldest first, with their memory revisions and runs."""
    rows, total = await appstate.list_agents(svc.db, caller, organization_id, limit=limit)
    return {"items": [d.as_json() for d in rows], "total": total}


@router.patch("/agents/{agent_id}", response_model=AgentOut, responses=_errors({404: "`agent_not_found`."}, body=True))
async def set_agent_status(
    organization_id: OrgPath,
    agent_id: Annotated[CanonicalUuid, Path(description="The agent definition's id.")],
    body: AgentStatusIn,
    svc: ServicesDep,
    caller: OrganizationCaller,
) -> Any:
    """Set an agent definition's status (`archived` retires it; its memories and runs stay)."""
    changed = await appstate.set_agent_status(svc.db, caller, organization_id, agent_id, status=body.status)
    return changed.as_json()


@router.delete(
    "/agents/{agent_id}",
    response_model=RemovedOut,
    responses=_errors({404: "`agent_not_found`.", 409: "`agent_in_use`: it owns memories or runs; archive it."}),
)
async def remove_agent(
    organization_id: OrgPath,
    agent_id: Annotated[CanonicalUuid, Path(description="The agent definition's id.")],
    svc: ServicesDep,
    caller: OrganizationCaller,
) -> dict[str, Any]:
    """Remove an agent definition that owns no memory and no run (409 `agent_in_use` otherwise)."""
    await appstate.remove_agent(svc.db, caller, organization_id, agent_id)
    return {"id": str(agent_id), "removed": True}


@router.post(
    "/runs",
    status_code=201,
    response_model=RunOut,
    responses=_errors(
        {404: "`agent_not_found`, or `user_not_found`.", 409: "`agent_archived`, or `definition_not_agent`."},
        body=True,
    ),
)
async def start_run(organization_id: OrgPath, body: RunIn, svc: ServicesDep, caller: OrganizationCaller) -> Any:
    """Start a run of an agent for a member: its id is the `run_id` of the memory tools' invocation."""
    run = await appstate.start_run(svc.db, caller, organization_id, definition_id=body.agent_id, user_id=body.user_id)
    return run.as_json()


@router.get("/runs", response_model=RunList, responses=_errors({}))
async def list_runs(
    organization_id: OrgPath,
    svc: ServicesDep,
    caller: OrganizationCaller,
    agent_id: Annotated[CanonicalUuid | None, Query(description="Only this agent's runs.")] = None,
    user_id: Annotated[CanonicalUuid | None, Query(description="Only the runs for this user.")] = None,
    limit: LimitQuery = 100,
) -> dict[str, Any]:
    """The organization's runs, newest first."""
    rows = await appstate.list_runs(
        svc.db, caller, organization_id, definition_id=agent_id, user_id=user_id, limit=limit
    )
    return {"items": [r.as_json() for r in rows]}


@router.post(
    "/runs/{run_id}/finish",
    response_model=RunOut,
    responses=_errors({404: "`run_not_found`.", 409: "`run_finished`: it has ended already."}, body=True),
)
async def finish_run(
    organization_id: OrgPath,
    run_id: Annotated[CanonicalUuid, Path(description="The run's id.")],
    body: RunFinishIn,
    svc: ServicesDep,
    caller: OrganizationCaller,
) -> Any:
    """End a running run."""
    run = await appstate.finish_run(svc.db, caller, organization_id, run_id, status=body.status)
    return run.as_json()
