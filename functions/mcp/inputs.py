"""The arguments of the MCP tools: one strict pydantic model per tool, mirroring the API's bodies.

Each model is what the SDK publishes as the tool's input schema (`input_schema`), and what a call's arguments
are validated against before any act runs: an extra field, a wrong type, a non-canonical id or text holding a
NUL byte is refused with the code the API gives the same body (`invalid_request`, `text_invalid`; see
`functions.mcp.refusals`). The memory tools' `arguments` are validated by the memory tools themselves
(`invalid_input` at their path), as over `POST /v1/memory/remember`; their published schema is the memory
tool's own. This module must never read a database or decide a scope.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from functions._wire import CleanJson, CleanText
from knowledge.search import DEFAULT_KEEP_TOP, DEFAULT_MIN_RELEVANCE, DEFAULT_PER_SOURCE, MAX_SEARCH_LIMIT
from state.ids import CanonicalUuid, OrganizationId
from state.paging import MAX_PAGE

__all__ = [
    "BriefArgs",
    "ForgetArgs",
    "GetSourceArgs",
    "InvocationArgs",
    "ListMemoriesArgs",
    "RememberArgs",
    "SearchArgs",
]

_STRICT = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class BriefArgs(BaseModel):
    """A front door turn (`POST /v1/context/briefs`): who asks, what they said, and optionally a policy."""

    model_config = _STRICT

    organization_id: OrganizationId
    """The actor's organization (an organization key's own)."""
    user_id: CanonicalUuid | None = None
    """The actor."""
    query: CleanText = Field(default="", max_length=20_000)
    """What the person said."""
    entities: list[Any] = Field(default_factory=list, max_length=500)
    """Rows already in scope of the turn, as `{kind, id, label?}`; a malformed entry is dropped, not fatal."""
    strict_entities: bool = Field(default=False, strict=True)
    """Refuse the turn (`invalid_entity_ref`) instead of dropping a malformed entity."""
    conversation_id: CanonicalUuid | None = None
    """The conversation of the turn."""
    policy: CleanJson | None = None
    """An operator's policy to build under instead of `front_door` (it must pass the publish check); an
    organization key sending one is refused with `policy_forbidden`."""
    explain: bool = Field(default=False, strict=True)
    """Also answer why each item the packer was given was kept or dropped."""


class SearchArgs(BaseModel):
    """A knowledge search for one organization (`POST /v1/knowledge/search`)."""

    model_config = _STRICT

    organization_id: OrganizationId
    """The organization searching."""
    query: CleanText = Field(min_length=1, max_length=2000)
    """The question."""
    limit: int = Field(default=8, ge=1, le=MAX_SEARCH_LIMIT, strict=True)
    """How many chunks."""
    include_platform: bool = Field(default=True, strict=True)
    """Join the platform documents."""
    include_organization: bool = Field(default=True, strict=True)
    """Join the organization's documents."""
    min_relevance: float = Field(default=DEFAULT_MIN_RELEVANCE, ge=0.0, le=1.0)
    """Drop hits neither the dense nor the BM25 half finds relevant; 0 keeps every hit."""
    keep_top: int = Field(default=DEFAULT_KEEP_TOP, ge=0, le=MAX_SEARCH_LIMIT, strict=True)
    """Keep a hit either half ranks within its own first `keep_top` (0: `min_relevance` alone)."""
    per_source: int | None = Field(default=DEFAULT_PER_SOURCE, ge=1, le=MAX_SEARCH_LIMIT)
    """The most chunks one document places by rank; null for no cap."""


class InvocationArgs(BaseModel):
    """The principal of one memory tool call, as `POST /v1/memory/remember` takes it."""

    model_config = _STRICT

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


class RememberArgs(BaseModel):
    """One `memory.remember` call: who calls, and the model's arguments (validated strictly by the tool)."""

    model_config = _STRICT

    invocation: InvocationArgs
    """The invoking principal."""
    arguments: CleanJson
    """memory.remember's arguments: attribute, text, scope, subject_refs, and at most one of expires_at and ttl."""


class ForgetArgs(BaseModel):
    """One `memory.forget` call: who calls, and `{memory_id}` of a current live memory."""

    model_config = _STRICT

    invocation: InvocationArgs
    """The invoking principal."""
    arguments: CleanJson
    """memory.forget's arguments: `memory_id`, the id of the current revision."""


class ListMemoriesArgs(BaseModel):
    """A page of live memories (`GET /v1/memory/memories`), newest first."""

    model_config = _STRICT

    organization_id: OrganizationId
    """The organization (a key's own)."""
    user_id: CanonicalUuid | None = None
    """Only this person's user-scope memories; omit it for every one."""
    definition_id: CanonicalUuid | None = None
    """Only this agent definition's."""
    cursor: CleanText | None = Field(default=None, max_length=2000)
    """The `next_cursor` of the page before."""
    limit: int = Field(default=100, ge=1, le=MAX_PAGE, strict=True)
    """The most memories the page holds."""


class GetSourceArgs(BaseModel):
    """One knowledge source of a scope (`GET /v1/knowledge/sources/{id}`): its status and readiness per model."""

    model_config = _STRICT

    source_id: CanonicalUuid
    """The source."""
    organization_id: OrganizationId | None = None
    """The organization the source belongs to; omit it only with `platform`."""
    platform: bool = Field(default=False, strict=True)
    """A platform source (an operator's); not with `organization_id`."""
