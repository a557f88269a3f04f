"""`/v1/memory/remember` and `/v1/memory/forget`: the handlers of the two memory tools, over HTTP.

The platform's tool layer calls these with the invoking principal (`invocation`: organization, definition,
run, and exactly one of a user or a trigger) and the model's `arguments`, which the strict tool input
models validate: an extra field such as `subject_key`, a wrong type, or an identity that is not canonical
(a subject kind outside the closed set, an id that is not canonical UUID text) is 422 `invalid_input` at
its path, never ignored; an expiry the service refuses (in the past, too far, both forms, a namespace the
settings forbid to expire) is 422 `memory_invalid_expiry` at its path. Every id of the invocation is
canonical UUID text too (422 `invalid_request` naming `body.invocation.<field>` otherwise). A refusal
answers with its memory code (`memory_duplicate`, `memory_not_current`, ...). This module must never write
memory except through `memory.tools.MemoryTools`.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from functions._wire import CleanJson
from functions.actions import memory as memory_actions
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._scopes import ANY_KEY, OrganizationCaller
from functions.errors import ApiError
from memory.models import ToolInvocation
from memory.tools import tool_schemas
from state.ids import CanonicalUuid, OrganizationId

__all__ = ["InvocationIn", "MemoryOut", "RememberCallIn", "SubjectRefOut", "ToolCallIn", "ToolsOut", "router"]

router = APIRouter(prefix="/v1/memory", tags=["memory"], responses=ERROR_RESPONSES, route_class=BodyRoute)


class InvocationIn(BaseModel):
    """The principal of one tool call."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    organization_id: OrganizationId
    """The tenancy of the call."""
    definition_id: CanonicalUuid
    """The agent definition that owns the memory."""
    run_id: CanonicalUuid
    """The calling run."""
    user_id: CanonicalUuid | None = None
    """The person the run acts for (exactly one of user and trigger)."""
    trigger_id: CanonicalUuid | None = None
    """The trigger that started the run."""

    def to_invocation(self) -> ToolInvocation:
        """The core invocation; 422 `invalid_invocation` unless exactly one of user and trigger is set."""
        try:
            return ToolInvocation(
                organization_id=self.organization_id,
                definition_id=self.definition_id,
                run_id=self.run_id,
                user_id=self.user_id,
                trigger_id=self.trigger_id,
            )
        except ValueError as exc:
            raise ApiError(422, "invalid_invocation", str(exc)) from exc


class ToolCallIn(BaseModel):
    """One tool call: who calls, and the model's arguments (validated strictly by the tool)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    invocation: InvocationIn
    """The invoking principal."""
    arguments: CleanJson
    """The tool arguments as the model wrote them."""


class RememberCallIn(ToolCallIn):
    """One memory.remember call: who calls, and the model's arguments, expiry included."""

    arguments: CleanJson = Field(
        description=(
            "memory.remember's arguments (`GET /v1/memory/tools` has their JSON schema): attribute, text, "
            "scope, subject_refs, and at most one of expires_at (an RFC 3339 date-time with its offset, in "
            "the future, within the deployment's longest expiry) and ttl (an ISO 8601 duration of whole "
            "weeks, days, hours, minutes or seconds, e.g. P30D). With neither, the namespace default applies "
            "(AC_CONTEXT_MEMORY_OBSERVATION_TTL, AC_CONTEXT_MEMORY_PREFERENCE_TTL). A refused expiry is 422 "
            "`memory_invalid_expiry` (or `invalid_input` for one that is not a date-time or duration) naming "
            "its field. The result carries `expires_at` (null: kept until superseded or forgotten)."
        ),
        examples=[
            {"attribute": "observation.buying_process", "text": "Buys through a committee", "scope": "organization",
             "ttl": "P30D"}
        ],
    )  # fmt: skip


class SubjectRefOut(BaseModel):
    """A row the memory is about."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: str
    """The entity kind, e.g. `crm.person`."""
    id: str
    """The row's id."""
    label: str | None = None
    """Display text, when the memory stored one."""


class MemoryOut(BaseModel):
    """The revision a memory tool wrote."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    memory_id: UUID
    """The revision's id (what `memory.forget` names)."""
    subject_key: str
    """The subject the memory is about, as the service keys it."""
    attribute: str
    """Its attribute, e.g. `observation.buying_process`."""
    scope: str
    """`user` or `organization`."""
    text: str | None
    """What is remembered; null for a tombstone."""
    subject_refs: list[SubjectRefOut]
    """The rows it is about."""
    supersedes_id: UUID | None
    """The revision it replaces, or null for the first of its chain."""
    forgotten: bool
    """True for the tombstone `memory.forget` appends."""
    created_at: str
    """When the revision was written (ISO 8601)."""
    expires_at: str | None
    """When it expires (ISO 8601); null: kept until superseded or forgotten."""


class ToolsOut(BaseModel):
    """The memory tools' definitions."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    tools: list[dict[str, Any]]
    """One JSON definition per tool (name, description, the JSON schema of its arguments)."""


_MEMORY_ERRORS = route_errors({
    400: None,
    404: "`organization_not_found`, or `memory_not_found` (forget: no such current memory).",
    409: "A refusal of the memory service: `memory_duplicate`, `memory_not_current`, `memory_already_forgotten`, "
    "`memory_refused`, `memory_conflict`; `organization_erasing` or `person_erasing` (an erasure is running).",
    422: "`invalid_request` (the body, `invocation`), `invalid_input` (the arguments, at their path), "
    "`invalid_invocation`, or `memory_invalid_expiry`.",
    429: "`memory_run_limit`: the run wrote as many memories as it may.",
})  # fmt: skip


_AS_WRITTEN: dict[str, Any] = {
    "response_model": MemoryOut,
    "response_model_exclude_unset": True,  # a subject ref without a label is answered without one, not with null
    "responses": _MEMORY_ERRORS,
}
"""What both tool routes declare (beside the organization scope of their caller): the revision they answer, and
their errors."""


@router.post("/remember", **_AS_WRITTEN)
async def remember(body: RememberCallIn, svc: ServicesDep, caller: OrganizationCaller) -> dict[str, Any]:
    """`memory.remember`: append a revision (or refuse with a memory code); the result shows `expires_at`."""
    return await memory_actions.remember(svc, caller, body.invocation.to_invocation(), body.arguments)


@router.post("/forget", **_AS_WRITTEN)
async def forget(body: ToolCallIn, svc: ServicesDep, caller: OrganizationCaller) -> dict[str, Any]:
    """`memory.forget`: append a tombstone to a current live memory."""
    return await memory_actions.forget(svc, caller, body.invocation.to_invocation(), body.arguments)


@router.get("/tools", dependencies=[ANY_KEY], response_model=ToolsOut)
async def tools() -> dict[str, Any]:
    """The JSON definitions of both memory tools, for the platform's tool layer."""
    return {"tools": tool_schemas()}
