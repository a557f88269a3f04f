"""The MCP tools: each validates its arguments, checks the caller's scope once, and makes ONE call of the action layer.

| tool               | the act (`functions.actions`)          | the API's twin                        |
|--------------------|----------------------------------------|---------------------------------------|
| `build_brief`      | `briefs.front_door_brief`              | `POST /v1/context/briefs`             |
| `search_knowledge` | `search.search_knowledge`              | `POST /v1/knowledge/search`           |
| `remember`         | `memory.remember`                      | `POST /v1/memory/remember`            |
| `forget`           | `memory.forget`                        | `POST /v1/memory/forget`              |
| `list_memories`    | `memory.memories_page`                 | `GET /v1/memory/memories`             |
| `get_source`       | `knowledge.source_detail`              | `GET /v1/knowledge/sources/{id}`      |

The scope check is the API's (`functions.actions.scope.check_organization`): an organization key names its
own organization only (403 `organization_forbidden` for any other, with no read), an operator any that exists
(404 `organization_not_found`); the act then repeats its own guard. Results are the API's JSON bodies. This
module must never answer MCP itself (`functions.mcp.server` does) nor hold a business rule.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from functions._services import Services
from functions.actions import briefs, knowledge, memory, search
from functions.actions.scope import Caller, check_organization
from functions.errors import ApiError
from functions.mcp.inputs import (
    BriefArgs,
    ForgetArgs,
    GetSourceArgs,
    InvocationArgs,
    ListMemoriesArgs,
    RememberArgs,
    SearchArgs,
)
from memory.models import ToolInvocation
from memory.tools import FORGET_TOOL, MEMORY_TOOLS, REMEMBER_TOOL

__all__ = ["TOOLS", "ToolSpec", "UnknownToolError", "call_tool", "source_uri"]

Act = Callable[[Services, Caller, Any], Awaitable[dict[str, Any]]]
_MEMORY_ARGUMENTS: dict[type[BaseModel], str] = {RememberArgs: REMEMBER_TOOL, ForgetArgs: FORGET_TOOL}


class UnknownToolError(ApiError):
    """A call of a tool this server does not have."""

    def __init__(self, name: str) -> None:
        super().__init__(404, "unknown_tool", f"no tool named {name[:100]!r}; tools/list names them")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: its name, what it does, its arguments' model, whether it only reads, and its act."""

    name: str
    """The tool name."""
    description: str
    """What it does, for the model."""
    arguments: type[BaseModel]
    """The strict model its arguments must match (published as its input schema)."""
    read_only: bool
    """Whether it only reads."""
    act: Act
    """The one action-layer call, given the validated arguments."""

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema the SDK publishes; a memory tool's `arguments` is the memory tool's own schema."""
        schema = self.arguments.model_json_schema()
        inner = _MEMORY_ARGUMENTS.get(self.arguments)
        if inner is not None:
            tool_schema = MEMORY_TOOLS[inner].input_model.model_json_schema()
            schema.setdefault("$defs", {}).update(tool_schema.pop("$defs", {}))
            description = schema["properties"]["arguments"].get("description")
            schema["properties"]["arguments"] = {**tool_schema, "description": description or ""}
        return schema


def source_uri(organization_id: UUID | None, source_id: UUID) -> str:
    """The resource URI of a source's text: `source://<organization id or platform>/<source id>`."""
    return f"source://{organization_id or 'platform'}/{source_id}"


async def _check(services: Services, caller: Caller, organization_id: UUID) -> None:
    await check_organization(services.db, caller, organization_id)


async def _brief(services: Services, caller: Caller, args: BriefArgs) -> dict[str, Any]:
    await _check(services, caller, args.organization_id)
    built = await briefs.front_door_brief(
        services, caller, args.organization_id, user_id=args.user_id, query=args.query, entities=args.entities,
        strict_entities=args.strict_entities, conversation_id=args.conversation_id, policy=args.policy,
        explain=args.explain, route="mcp",
    )  # fmt: skip
    return {
        "policy": built.policy,
        "brief": built.brief.model_dump(mode="json"),
        "dropped_entities": [{"position": d.position, "reason": d.reason} for d in built.dropped],
        "explanation": None if built.explanation is None else built.explanation.model_dump(mode="json"),
    }


async def _search(services: Services, caller: Caller, args: SearchArgs) -> dict[str, Any]:
    await _check(services, caller, args.organization_id)
    hits = await search.search_knowledge(
        services.db, services.embedders.get, caller, args.organization_id, args.query, limit=args.limit,
        include_platform=args.include_platform, include_organization=args.include_organization,
        min_relevance=args.min_relevance, keep_top=args.keep_top, per_source=args.per_source,
    )  # fmt: skip
    return {
        "hits": [
            {
                "chunk_id": h.chunk_id,
                "source_id": str(h.source_id),
                "source_title": h.source_title,
                "source_uri": source_uri(h.source_organization_id, h.source_id),
                "platform": h.source_organization_id is None,
                "ordinal": h.ordinal,
                "text": h.text,
                "score": h.score,
                "placed": h.placed,
                "embedding_model": h.embedding_model,
            }
            for h in hits
        ]
    }


def _invocation(args: InvocationArgs) -> ToolInvocation:
    try:
        return ToolInvocation(
            organization_id=args.organization_id, definition_id=args.definition_id, run_id=args.run_id,
            user_id=args.user_id, trigger_id=args.trigger_id,
        )  # fmt: skip
    except ValueError as exc:
        raise ApiError(422, "invalid_invocation", str(exc)) from exc


async def _remember(services: Services, caller: Caller, args: RememberArgs) -> dict[str, Any]:
    await _check(services, caller, args.invocation.organization_id)
    return await memory.remember(services, caller, _invocation(args.invocation), args.arguments)


async def _forget(services: Services, caller: Caller, args: ForgetArgs) -> dict[str, Any]:
    await _check(services, caller, args.invocation.organization_id)
    return await memory.forget(services, caller, _invocation(args.invocation), args.arguments)


async def _memories(services: Services, caller: Caller, args: ListMemoriesArgs) -> dict[str, Any]:
    await _check(services, caller, args.organization_id)
    page = await memory.memories_page(
        services.db, caller, args.organization_id, user_id=args.user_id, definition_id=args.definition_id,
        cursor=args.cursor, limit=args.limit,
    )  # fmt: skip
    return {"items": [m.as_json() for m in page.items], "total": page.total, "next_cursor": page.next_cursor}


def source_scope(caller: Caller, organization_id: UUID | None, *, platform: bool) -> UUID | None:
    """The scope a source request names (None: the platform), refused as the API refuses it."""
    if platform and organization_id is not None:
        raise ApiError(422, "scope_ambiguous", "send organization_id or platform=true, not both")
    if not platform and organization_id is None:
        raise ApiError(422, "scope_required", "send organization_id, or platform=true for a platform document")
    if platform and not caller.operator:
        raise ApiError(403, "platform_forbidden", "an organization key cannot read or write the platform scope")
    return organization_id


async def _source(services: Services, caller: Caller, args: GetSourceArgs) -> dict[str, Any]:
    scope = source_scope(caller, args.organization_id, platform=args.platform)
    if scope is not None:
        await _check(services, caller, scope)
    detail = await knowledge.source_detail(services.db, caller, args.source_id, organization_id=scope)
    return {
        **detail.view.identity_json(),
        "updated_at": detail.view.updated_at.isoformat(),
        "text_uri": source_uri(scope, args.source_id),
        "models": [
            {"model": m.model, "status": m.status, "chunks": m.chunk_count, "embedded": m.embedded_count,
             "failure_reason": m.failure_reason}
            for m in detail.models
        ],
    }  # fmt: skip


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "build_brief",
            "Build the context brief of one front door turn for an organization: the items (knowledge, memory, "
            "dossier, conversation, ...) packed under the front_door policy's token budgets, with their citations. "
            "An operator may pass another policy; explain=true also says why each item was kept or dropped.",
            BriefArgs, True, _brief,
        ),
        ToolSpec(
            "search_knowledge",
            "Search an organization's knowledge (and the platform's documents) for the chunks that best answer a "
            "question, hybrid dense and BM25, under the organization's live embedding model.",
            SearchArgs, True, _search,
        ),
        ToolSpec(
            "remember",
            "memory.remember for an agent run: keep a durable observation or preference (attribute, text, scope "
            "'user' or 'organization', at most one subject ref, an optional expiry). The invocation names the "
            "organization, agent definition, run and exactly one of user or trigger. "
            + MEMORY_TOOLS[REMEMBER_TOOL].description,
            RememberArgs, False, _remember,
        ),
        ToolSpec(
            "forget",
            "memory.forget for an agent run: append a tombstone to a current live memory, named by the id of its "
            "current revision ({memory_id}).",
            ForgetArgs, False, _forget,
        ),
        ToolSpec(
            "list_memories",
            "A page of an organization's live memories, newest first (both scopes, or one person's with user_id; "
            "one agent's with definition_id); pass next_cursor back as cursor for the next page.",
            ListMemoriesArgs, True, _memories,
        ),
        ToolSpec(
            "get_source",
            "One knowledge source: its title, status, failure reason, owner, review date and readiness per "
            "embedding model; its text is the resource at text_uri.",
            GetSourceArgs, True, _source,
        ),
    )
}  # fmt: skip
"""The tools by name, in the order `tools/list` answers them."""


async def call_tool(services: Services, caller: Caller, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Validate `arguments` against the tool's model and run its act (raises `UnknownToolError`, the refusals)."""
    spec = TOOLS.get(name)
    if spec is None:
        raise UnknownToolError(name)
    return await spec.act(services, caller, spec.arguments.model_validate(arguments))
