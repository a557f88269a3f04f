"""`GET /v1/knowledge/sources`: the sources of a scope, a page at a time (one source's routes: `functions.api.source`).

The sources of a scope (an organization, or the platform with `platform=true`) page by cursor, newest
first, each with its status, failure reason, attempts, owner, review date, `overdue`, and the model it is
shown under with its chunk counts; `status`, `overdue` and `title` (a text the title contains, any case)
filter the rows and the `total` (`knowledge.ingestion.source_pages`). The models of a source's chunk page
and progress live here too, beside the page of sources. This module must never change a source.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict

from functions.actions.knowledge import sources_page
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._knowledge_models import SourceListItemOut
from functions.api._pages import (
    CURSOR_ERRORS,
    SORT_ERRORS,
    CursorQuery,
    DirQuery,
    PageOut,
    limit_query,
    page_body,
    scope_of,
    sort_query,
)
from functions.api._params import PlatformScope, ScopeOrganization
from functions.api._scopes import OrganizationCaller
from knowledge.ingestion.source_pages import SOURCE_SORTS

__all__ = ["ChunkOut", "ChunkPage", "ProgressOut", "SourcePage", "router"]

router = APIRouter(prefix="/v1/knowledge", tags=["knowledge"], responses=ERROR_RESPONSES, route_class=BodyRoute)

_OUT = ConfigDict(extra="forbid", use_attribute_docstrings=True)
_ORG_404 = "`organization_not_found`: the organization the request names does not exist."


class SourcePage(PageOut):
    """A page of one scope's sources, newest first."""

    items: list[SourceListItemOut]
    """At most `limit` sources."""
    sources: list[SourceListItemOut]
    """The same rows as `items` (the key this list answered before it paged), for older callers."""


class ChunkOut(BaseModel):
    """One chunk of a source, whole."""

    model_config = _OUT

    id: int
    """The chunk's id."""
    source_id: str
    """Its source."""
    embedding_model: str
    """The model it belongs to."""
    ordinal: int
    """Its place in the document, from 0."""
    text: str
    """Its full text."""
    tokens: int
    """Its size in tokens."""
    embedded: bool
    """Whether its embedding is written."""


class ChunkPage(PageOut):
    """A page of a source's chunks, in ordinal order."""

    items: list[ChunkOut]
    """At most `limit` chunks."""


class ModelProgressOut(BaseModel):
    """A source's progress under one model."""

    model_config = _OUT

    embedding_model: str
    """The model."""
    status: str
    """`pending`, `ready` or `failed` under it."""
    chunk_count: int | None
    """Chunks written under it; null until they are."""
    embedded_count: int
    """Chunks embedded so far."""
    failure_reason: str | None
    """Why it failed under this model, or null."""


class ProgressOut(BaseModel):
    """How far a source's ingestion is."""

    model_config = _OUT

    source_id: str
    """The source."""
    status: str
    """`pending`, `ready`, `failed` or `deleting`."""
    stage: Literal["extracting", "embedding", "finishing", "ready", "failed", "deleting"]
    """`extracting` (chunks not written yet), `embedding` (written, not all embedded), `finishing` (all
    embedded, not yet ready), or the final status."""
    attempts: int
    """How many ingestion attempts it has had."""
    pending_since: str | None
    """When the current attempt started (ISO 8601), while pending."""
    failure_reason: str | None
    """Why it failed, or null."""
    chunks_done: int
    """Chunks embedded, over every model it is wanted under."""
    chunks_total: int | None
    """Chunks written, over every model; null while one model's are not written yet."""
    models: list[ModelProgressOut]
    """Its progress under each model it is wanted under."""


_Status = Literal["pending", "ready", "failed", "deleting"]


@router.get(
    "/sources",
    response_model=SourcePage,
    responses=route_errors({404: _ORG_404, 422: f"{CURSOR_ERRORS} {SORT_ERRORS}"}),
)
async def get_sources(
    svc: ServicesDep,
    caller: OrganizationCaller,
    organization_id: ScopeOrganization = None,
    platform: PlatformScope = False,
    status: Annotated[_Status | None, Query(description="Only the sources with this status.")] = None,
    overdue: Annotated[bool, Query(description="Only the sources whose review date is before today (UTC).")] = False,
    title: Annotated[
        str | None, Query(max_length=500, description="Only those whose title contains this text.")
    ] = None,
    sort: Annotated[str | None, sort_query(sorted(SOURCE_SORTS), "created")] = None,
    dir: DirQuery = None,
    cursor: CursorQuery = None,
    limit: Annotated[int, limit_query("sources")] = 100,
) -> dict[str, Any]:
    """A page of one scope's sources, newest first, with status, reason, owner, review date, model and chunks."""
    scope = scope_of(organization_id, platform)
    page = await sources_page(
        svc.db, caller, scope, status=status, overdue=overdue, title=title, sort=sort, direction=dir, cursor=cursor,
        limit=limit,
    )  # fmt: skip
    return page_body(page, [r.as_json() for r in page.items], legacy="sources")
