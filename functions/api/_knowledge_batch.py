"""The body of `POST /v1/knowledge/sources:batch`: many documents of one scope, registered at once.

JSON: `{organization_id | platform, items: [{uri?, content, filename?, title?, media_type?}]}` (an item
with a `uri` is that URI's fetched content; one without is an upload identified by its content), or
multipart with many `file` fields plus `organization_id` or `platform`. Every item is bounded by
`AC_CONTEXT_MAX_UPLOAD_BYTES`, the whole request by `MAX_BATCH_BYTES`. This module must never extract,
chunk or embed.
"""

from __future__ import annotations

from typing import Final
from uuid import UUID

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import FormData, UploadFile

from functions.errors import ApiError
from knowledge.register import Document

__all__ = ["MAX_BATCH_BYTES", "MAX_BATCH_ITEMS", "BatchIn", "BatchItemIn", "form_scope", "read_batch"]

MAX_BATCH_ITEMS: Final = 5_000
"""Most documents one batch request registers."""
MAX_BATCH_BYTES: Final = 64 * 1024 * 1024
"""Largest batch request body."""


class BatchItemIn(BaseModel):
    """One document of a batch."""

    model_config = ConfigDict(extra="forbid")

    uri: str | None = Field(default=None, min_length=1, max_length=2000)
    """The URI it was fetched from (its identity), or None for an upload identified by its content."""
    content: str
    """The document text (Markdown, HTML or plain text)."""
    filename: str | None = Field(default=None, max_length=255)
    """A file name (its extension tells the type when `media_type` is omitted)."""
    title: str | None = Field(default=None, max_length=500)
    """A title; defaults to the file name or the URI's last segment."""
    media_type: str | None = Field(default=None, max_length=100)
    """`text/markdown`, `text/html` or `text/plain`."""


class BatchIn(BaseModel):
    """Many documents of one scope."""

    model_config = ConfigDict(extra="forbid")

    organization_id: UUID | None = None
    """The organization; omit it and set `platform` for platform documents."""
    platform: bool = False
    """True for platform documents (shared by every organization)."""
    items: list[BatchItemIn] = Field(min_length=1, max_length=MAX_BATCH_ITEMS)
    """The documents."""


def form_scope(form: FormData) -> tuple[UUID | None, bool]:
    """The `organization_id` and `platform` fields of a multipart body (the caller checks they agree)."""
    raw_org = form.get("organization_id")
    platform = str(form.get("platform", "false")).lower() in {"1", "true", "yes"}
    try:
        return (UUID(str(raw_org)) if raw_org else None), platform
    except ValueError:
        raise ApiError(422, "invalid_request", "organization_id is not a UUID") from None


def _checked(data: bytes, limit: int, position: int) -> bytes:
    if len(data) > limit:
        raise ApiError(413, "document_too_large", f"item {position} is larger than the {limit}-byte limit")
    if not data:
        raise ApiError(422, "document_empty", f"item {position} is empty")
    return data


def _document(item: BatchItemIn, limit: int, position: int) -> Document:
    data = _checked(item.content.encode(), limit, position)
    return Document(data, item.filename or "", title=item.title, media_type=item.media_type, uri=item.uri)


async def read_batch(request: Request, limit: int) -> tuple[UUID | None, bool, list[Document]]:
    """The scope and the documents of a batch request (JSON or multipart)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BATCH_BYTES:
        raise ApiError(413, "batch_too_large", f"a batch request may carry at most {MAX_BATCH_BYTES} bytes")
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        body = BatchIn.model_validate_json(await request.body())
        docs = [_document(item, limit, n) for n, item in enumerate(body.items)]
        return body.organization_id, body.platform, docs
    if content_type.startswith("multipart/form-data"):
        async with request.form(max_files=MAX_BATCH_ITEMS, max_fields=8) as form:
            organization_id, platform = form_scope(form)
            files = [f for f in form.getlist("file") if isinstance(f, UploadFile)]
            if not files:
                raise ApiError(422, "file_missing", "send the documents in multipart fields named 'file'")
            if len(files) > MAX_BATCH_ITEMS:
                raise ApiError(422, "batch_too_many_items", f"a batch holds at most {MAX_BATCH_ITEMS} documents")
            docs = [
                Document(
                    _checked(await f.read(limit + 1), limit, n), f.filename or "document", media_type=f.content_type
                )
                for n, f in enumerate(files)
            ]
        return organization_id, platform, docs
    raise ApiError(415, "content_type_unsupported", "send application/json (items) or multipart/form-data (files)")
