"""The MCP face: one low-level `mcp.server.Server` whose handlers translate MCP into the acts of `functions.mcp.tools`.

The transport (streamable HTTP at `/mcp`, `functions.mcp.http`; stdio, `functions.mcp.stdio`) supplies a `Backend`:
for each request, the open services and the `Caller` the request acts as. Then:

- `tools/list` answers the six tools with their published input schemas (the pydantic models of
  `functions.mcp.inputs`) and read-only hints;
- `tools/call` runs one tool; a refusal of the act (a scope, a malformed argument, a core error) is a tool
  result with `isError: true`, its `structuredContent` the API's envelope `{"error": {code, message,
  details}}` and its text the same JSON, so an agent reads the project's code where it reads any result;
- a call of a tool that does not exist, and a refused resource read, are JSON-RPC errors (`-32602`) whose
  `data` is the same `{code, message, details}`, as the protocol wants for a request that names nothing;
- `resources/templates/list` names `source://{organization_id}/{source_id}`; `resources/read` answers its text
  (`functions.mcp.resources`).

This module must never hold a business rule or decide a scope: the action layer does.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from functions._services import Services
from functions.actions.scope import Caller
from functions.mcp.refusals import Refusal, refusal
from functions.mcp.resources import SOURCE_TEMPLATE, read_source_text
from functions.mcp.tools import TOOLS, UnknownToolError, call_tool

__all__ = ["SERVER_NAME", "Backend", "build_server"]

SERVER_NAME = "ac-context"
"""The server's name in `serverInfo`."""

Backend = Callable[[ServerRequestContext[Any, Any]], Awaitable[tuple[Services, Caller]]]
"""What a transport supplies per request: the open services and the caller (or raises the refusal)."""


def _text(value: Any) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=json.dumps(value, ensure_ascii=False, default=str))]


def _refused(refused: Refusal) -> types.CallToolResult:
    body = refused.body()
    return types.CallToolResult(content=_text(body), structured_content=body, is_error=True)


def _protocol_error(refused: Refusal) -> MCPError:
    data = {"code": refused.code, "message": refused.message, "details": refused.details}
    return MCPError(code=types.INVALID_PARAMS, message=f"{refused.code}: {refused.message}", data=data)


def _tools() -> list[types.Tool]:
    return [
        types.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.input_schema(),
            annotations=types.ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=False),
        )
        for spec in TOOLS.values()
    ]


def build_server(backend: Backend, *, version: str = "") -> Server[Any]:
    """The MCP server over `backend` (see the module)."""
    listed = _tools()

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in TOOLS:
            raise _protocol_error(refusal(UnknownToolError(params.name)))
        try:
            services, caller = await backend(ctx)
            result = await call_tool(services, caller, params.name, params.arguments or {})
        except Exception as exc:
            return _refused(refusal(exc))
        return types.CallToolResult(content=_text(result), structured_content=result)

    async def list_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=SOURCE_TEMPLATE,
            name="knowledge_source_text",
            description="A knowledge source's text, its chunks in order (organization_id: `platform` for the "
            "platform's documents).",
            mime_type="text/plain",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])  # every resource is addressed through the template

    async def read(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            services, caller = await backend(ctx)
            read = await read_source_text(services, caller, str(params.uri))
        except Exception as exc:
            raise _protocol_error(refusal(exc)) from None
        contents = types.TextResourceContents(uri=params.uri, text=read["text"], mime_type="text/plain")
        return types.ReadResourceResult(contents=[contents])

    return Server(
        SERVER_NAME,
        version=version,
        instructions="The state-and-knowledge layer: context briefs, knowledge search and an agent's memory. "
        "A refused call answers isError with {error: {code, message, details}}.",
        on_list_tools=list_tools,
        on_call_tool=call,
        on_list_resource_templates=list_templates,
        on_list_resources=list_resources,
        on_read_resource=read,
    )
