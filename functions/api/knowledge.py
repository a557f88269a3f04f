"""`/v1/knowledge/…`: upload or sync a document, register a batch, search.

An upload is multipart (`file`, plus `organization_id` or `platform=true`, and an optional `title`,
`owner` and `review_by`); a synced URI is JSON (`uri`, the `content` the connector fetched, a scope and an
optional title, owner and review date): this service never fetches a URL itself. Both are idempotent per
organization (the same content, or the same URI, registers one source) and bounded by
`AC_CONTEXT_MAX_UPLOAD_BYTES`. A pending source gets a `knowledge/source.uploaded` event.

Owner and review date: a review date is `YYYY-MM-DD`; anything else is 422 `invalid_request` with the
field's path, and nothing is stored. The same document sent again with an owner or a review date sets it
on the source (a field left out keeps its value); a re-synced URI's new version carries the old one's over
unless the sync names its own. The paged list of sources is `functions.api.source_pages`.

Re-sync: a known URI sent again with different content registers a new version (`outcome: resync`,
`replaces`: the live source) and sends `knowledge/source.sync.requested`; the new version replaces the old
one in the transaction that makes it ready, so search answers from the old text until then. The same
content again is a no-op that says so (`outcome: unchanged`).

`POST /v1/knowledge/sources:batch` registers many documents of one scope at once (JSON `items`, each a URI
with its content or an upload's content with a file name; or multipart with many `file` fields) and sends
`knowledge/sources.batch.requested` events of at most `MAX_BATCH_SOURCES` ids each.

Events go through the outbox (`state.outbox`, `functions.outbox.delivery`): an upload's or a batch's events are
written in the transaction that registers the sources, then sent at once; when Inngest cannot be reached the answer is
still 202 with `event_status: queued` and the reason, and the service sends it when Inngest answers.

One source's routes (read, chunks, progress, retry, delete) are `functions.api.source`. This module must never
extract, chunk or embed: the functions do.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import FormData, UploadFile

from functions._services import Services
from functions._wire import CleanText
from functions.actions import knowledge, search
from functions.actions.knowledge import Registered
from functions.actions.scope import Caller
from functions.api._body import BodyRoute, parsed_body
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._knowledge_batch import (
    MAX_BATCH_ITEMS,
    BatchIn,
    Owner,
    ReviewDate,
    form_review,
    form_scope,
    read_batch,
)
from functions.api._knowledge_models import BatchRegisteredOut, SearchOut, SourceRegisteredOut
from functions.api._scopes import OrganizationCaller, organization_scope
from functions.errors import ApiError
from knowledge.ingestion.registration import RegisteredSource
from knowledge.search import DEFAULT_KEEP_TOP, DEFAULT_MIN_RELEVANCE, DEFAULT_PER_SOURCE, MAX_SEARCH_LIMIT

__all__ = ["SearchIn", "UriSourceIn", "router"]

router = APIRouter(prefix="/v1/knowledge", tags=["knowledge"], responses=ERROR_RESPONSES, route_class=BodyRoute)

_ORG_404 = "`organization_not_found`: the organization the request names does not exist."
_REGISTER_ERRORS = route_errors({
    400: None,
    404: _ORG_404,
    409: "`source_deleting`: the source this document lands on is being deleted; send it again afterwards.",
    415: "`unsupported_media_type` (a Content-Type this route does not read), or `document_type_unsupported` (a file"
    " type no extractor reads).",
})  # fmt: skip


class UriSourceIn(BaseModel):
    """A URI-backed source: the URI is its identity, `content` what the connector fetched from it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    organization_id: UUID | None = None
    """The organization; omit it and set `platform` for a platform document."""
    platform: bool = Field(default=False, strict=True)
    """True for a platform document (shared by every organization)."""
    uri: CleanText = Field(min_length=1, max_length=2000)
    """The source's URI."""
    content: CleanText
    """The document text (Markdown, HTML or plain text) as fetched."""
    title: CleanText | None = Field(default=None, max_length=500)
    """A title; defaults to the URI's last segment."""
    media_type: CleanText | None = Field(default=None, max_length=100)
    """`text/markdown`, `text/html` or `text/plain`; guessed from the URI when omitted."""
    owner: Owner = None
    """Who answers for the document (one line, at most 200 characters); omit it to keep the source's."""
    review_by: ReviewDate = None
    """When it must be reviewed, `YYYY-MM-DD`; omit it to keep the source's. Past it, the source is overdue."""


class SearchIn(BaseModel):
    """A knowledge search for one organization."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    organization_id: UUID
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
    """Keep a hit either half ranks within its own first `keep_top` unless its relevance is under 0.83 of
    `min_relevance`; 0 (the default) applies `min_relevance` alone."""
    per_source: int | None = Field(default=DEFAULT_PER_SOURCE, ge=1, le=MAX_SEARCH_LIMIT)
    """The most chunks one document places by rank (its other chunks then fill what room the limit leaves);
    null for no cap."""


def _scope(organization_id: UUID | None, platform: bool) -> UUID | None:
    if platform and organization_id is not None:
        raise ApiError(422, "scope_ambiguous", "send organization_id or platform=true, not both")
    if not platform and organization_id is None:
        raise ApiError(422, "scope_required", "send organization_id, or platform=true for a platform document")
    return organization_id


def _check_size(size: int, limit: int) -> None:
    if size > limit:
        raise ApiError(413, "document_too_large", f"the document is larger than the {limit}-byte limit")
    if size == 0:
        raise ApiError(422, "document_empty", "the document is empty")


def _answer(registered: Registered) -> JSONResponse:
    """The registered source, with its event's id and delivery (what cannot be sent waits in the outbox)."""
    source, delivery = registered.source, registered.delivery
    body = {
        "source_id": str(source.source_id),
        "created": source.created,
        "status": source.status,
        "event_id": delivery.event_ids[0] if delivery is not None and delivery.event_ids else None,
        "event_status": delivery.status if delivery is not None and delivery.event_ids else None,
        "event_error": None if delivery is None else delivery.error,
        "outcome": source.outcome,
        "replaces": None if source.replaces is None else str(source.replaces),
    }
    return JSONResponse(status_code=202 if source.created else 200, content=body)


BatchCaller = Annotated[Caller, organization_scope(max_files=MAX_BATCH_ITEMS)]
"""Scope `organization` for a multipart body of up to `MAX_BATCH_ITEMS` files."""

_UPLOAD_FORM = {
    "type": "object",
    "required": ["file"],
    "properties": {
        "file": {"type": "string", "format": "binary", "description": "The document (PDF, Markdown, HTML, text)."},
        "organization_id": {"type": "string", "format": "uuid", "description": "The organization; or platform."},
        "platform": {"type": "string", "enum": ["true", "false"], "description": "true for a platform document."},
        "title": {"type": "string", "description": "A title; defaults to the file name."},
        "owner": {"type": "string", "description": "Who answers for the document (at most 200 characters)."},
        "review_by": {"type": "string", "format": "date", "description": "Review date, YYYY-MM-DD."},
    },
}


_BATCH_FORM = {
    "type": "object",
    "required": ["file"],
    "properties": {
        "file": {"type": "array", "items": {"type": "string", "format": "binary"}, "description": "The documents."},
        "organization_id": {"type": "string", "format": "uuid", "description": "The organization; or platform."},
        "platform": {"type": "string", "enum": ["true", "false"], "description": "true for platform documents."},
        "owner": {"type": "string", "description": "Who answers for every document (at most 200 characters)."},
        "review_by": {"type": "string", "format": "date", "description": "Review date of every document."},
    },
}
_BATCH_JSON = BatchIn.model_json_schema()


@router.post(
    "/sources",
    status_code=202,
    response_model=None,
    responses={
        202: {"model": SourceRegisteredOut, "description": "A new source (or a new version of a URI), pending."},
        200: {"model": SourceRegisteredOut, "description": "A document the scope already had (`unchanged`)."},
        **_REGISTER_ERRORS,
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "A document upload (multipart, at most AC_CONTEXT_MAX_UPLOAD_BYTES) or a synced URI (JSON).",
            "content": {
                "multipart/form-data": {"schema": _UPLOAD_FORM},
                "application/json": {"schema": UriSourceIn.model_json_schema()},
            },
        }
    },
)
async def create_source(request: Request, svc: ServicesDep, caller: OrganizationCaller) -> JSONResponse:
    """Upload a document (multipart) or register a synced URI (JSON); idempotent per organization."""
    limit = svc.settings.max_upload_bytes
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit + 64 * 1024:
        raise ApiError(413, "document_too_large", f"the request is larger than the {limit}-byte limit")
    body = parsed_body(request)
    if body.kind == "form":
        return await _upload(body.form, request, svc, caller, limit)
    if body.kind != "json":
        raise ApiError(422, "invalid_request", "send a document (multipart) or a synced URI (JSON)")
    uri = UriSourceIn.model_validate(body.value)
    organization_id = _scope(uri.organization_id, uri.platform)
    data = uri.content.encode()
    _check_size(len(data), limit)
    registered = await knowledge.register_document(
        svc, caller, organization_id, data, deliver=request.app.state.outbox.deliver, uri=uri.uri, title=uri.title,
        media_type=uri.media_type, owner=uri.owner, review_by=uri.review_by,
    )  # fmt: skip
    return _answer(registered)


async def _upload(form: FormData, request: Request, svc: Services, caller: Caller, limit: int) -> JSONResponse:
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise ApiError(422, "file_missing", "send the document in a multipart field named 'file'")
    organization_id = _scope(*form_scope(form))
    review = form_review(form)
    data = await upload.read(limit + 1)
    _check_size(len(data), limit)
    title = form.get("title")
    registered = await knowledge.register_document(
        svc, caller, organization_id, data, deliver=request.app.state.outbox.deliver,
        filename=upload.filename or "document", title=str(title) if isinstance(title, str) and title else None,
        media_type=upload.content_type, owner=review.owner, review_by=review.review_by,
    )  # fmt: skip
    return _answer(registered)


def _registered_json(r: RegisteredSource) -> dict[str, Any]:
    return {
        "source_id": str(r.source_id),
        "created": r.created,
        "status": r.status,
        "outcome": r.outcome,
        "replaces": None if r.replaces is None else str(r.replaces),
    }


@router.post(
    "/sources:batch",
    status_code=202,
    response_model=None,
    responses={202: {"model": BatchRegisteredOut, "description": "The batch, registered."}, **_REGISTER_ERRORS},
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "Many documents of one scope: JSON `items`, or multipart with many `file` fields.",
            "content": {"multipart/form-data": {"schema": _BATCH_FORM}, "application/json": {"schema": _BATCH_JSON}},
        }
    },
)
async def create_sources_batch(request: Request, svc: ServicesDep, caller: BatchCaller) -> JSONResponse:
    """Register many documents of one scope at once and send their ingestion events in batches."""
    organization_id, platform, docs = await read_batch(parsed_body(request), svc.settings.max_upload_bytes)
    scope = _scope(organization_id, platform)
    batch = await knowledge.register_batch(svc, caller, scope, docs, deliver=request.app.state.outbox.deliver)
    body = {
        "sources": [_registered_json(r) for r in batch.sources],
        "event_ids": list(batch.delivery.event_ids),
        "event_status": batch.delivery.status if batch.event_written else None,
        "event_error": batch.delivery.error,
    }
    return JSONResponse(status_code=202, content=body)


@router.post("/search", response_model=SearchOut, responses=route_errors({400: None, 404: _ORG_404}))
async def search_knowledge(body: SearchIn, svc: ServicesDep, caller: OrganizationCaller) -> dict[str, Any]:
    """The best chunks for a query, under the organization's live model."""
    hits = await search.search_knowledge(
        svc.db, svc.embedders.get, caller, body.organization_id, body.query, limit=body.limit,
        include_platform=body.include_platform, include_organization=body.include_organization,
        min_relevance=body.min_relevance, keep_top=body.keep_top, per_source=body.per_source,
    )  # fmt: skip
    return {
        "hits": [
            {
                "chunk_id": h.chunk_id,
                "source_id": str(h.source_id),
                "source_title": h.source_title,
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
