"""The MCP resource of a knowledge source's text, `source://{organization_id}/{source_id}`.

(`organization_id` is `platform` for a platform source.)

Its text is the source's chunks in ordinal order under the model it is shown under, read a page at a time
through `functions.actions.knowledge.chunks_page` (the act behind `GET /v1/knowledge/sources/{id}/chunks`), up to
`MAX_TEXT_CHARS`; a longer document ends with a line saying how many chunks were left out. The scope check is
the tools' (`functions.mcp.tools`): another organization's id is 403 `organization_forbidden` for an
organization key, and a source outside the named scope 404 `knowledge_source_not_found`, as an unknown one.

A brief's citations are not a resource: a front door brief is built per call and never stored (its items
carry their citations inline), so there is no stored thing an URI could name. This module must never write.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from functions._services import Services
from functions.actions import knowledge
from functions.actions.scope import Caller, check_organization
from functions.errors import ApiError
from functions.mcp.tools import source_scope
from state.ids import UUID_RULE, is_canonical_uuid
from state.paging import MAX_PAGE

__all__ = ["MAX_TEXT_CHARS", "SOURCE_TEMPLATE", "read_source_text"]

SOURCE_TEMPLATE = "source://{organization_id}/{source_id}"
"""The URI template of a source's text (`organization_id` is `platform` for a platform source)."""
MAX_TEXT_CHARS = 2_000_000
"""The most characters one read answers; the chunks past it are counted, not sent."""
_PREFIX = "source://"


def _uuid(value: str, field: str) -> UUID:
    if not is_canonical_uuid(value):
        details = [{"loc": ["uri", field], "msg": f"must be {UUID_RULE}", "type": "uuid_parsing"}]
        raise ApiError(422, "invalid_request", f"the resource URI's {field} must be {UUID_RULE}", details=details)
    return UUID(value)


def parse_source_uri(uri: str) -> tuple[UUID | None, UUID]:
    """The scope (None: the platform) and source a `source://` URI names, or 422 `invalid_request`."""
    organization, _, source = uri[len(_PREFIX) :].partition("/") if uri.startswith(_PREFIX) else ("", "", "")
    if not organization or not source or "/" in source:
        raise ApiError(404, "resource_not_found", f"no resource at this URI; sources are read at {SOURCE_TEMPLATE}")
    scope = None if organization == "platform" else _uuid(organization, "organization_id")
    return scope, _uuid(source, "source_id")


async def read_source_text(services: Services, caller: Caller, uri: str) -> dict[str, Any]:
    """A source's text and its accounting: `{text, chunks, left_out, model}` (see the module)."""
    scope, source_id = parse_source_uri(uri)
    scope = source_scope(caller, scope, platform=scope is None)
    if scope is not None:
        await check_organization(services.db, caller, scope)
    parts: list[str] = []
    size = chunks = left_out = 0
    model: str | None = None
    cursor: str | None = None
    while True:
        page = await knowledge.chunks_page(
            services.db, caller, source_id, organization_id=scope, cursor=cursor, limit=MAX_PAGE
        )
        for chunk in page.items:
            model = model or chunk.embedding_model
            if size + len(chunk.text) > MAX_TEXT_CHARS:
                left_out += 1
                continue
            parts.append(chunk.text)
            size += len(chunk.text)
            chunks += 1
        cursor = page.next_cursor
        if cursor is None:
            break
        if left_out:
            left_out = page.total - chunks
            break
    text = "\n\n".join(parts)
    if left_out:
        text += f"\n\n[{left_out} more chunks left out: the text is longer than {MAX_TEXT_CHARS} characters]"
    return {"text": text, "chunks": chunks, "left_out": left_out, "model": model}
