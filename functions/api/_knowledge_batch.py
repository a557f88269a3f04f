"""The body of `POST /v1/knowledge/sources:batch`: many documents of one scope, registered at once.

JSON: `{organization_id | platform, items: [{uri?, content, filename?, title?, media_type?, owner?,
review_by?}]}` (an item with a `uri` is that URI's fetched content; one without is an upload identified by
its content), or multipart with many `file` fields plus `organization_id` or `platform` and an optional
`owner` and `review_by` for every file. A review date is `YYYY-MM-DD` (`knowledge.ingestion.review`); a bad one is a
422 naming its path (`items.3.review_by` in JSON, `review_by` in a form), and nothing is stored. Every
item is bounded by `AC_CONTEXT_MAX_UPLOAD_BYTES`, the whole request by `MAX_BATCH_BYTES`. This module must
never extract, chunk or embed.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Final, NoReturn
from uuid import UUID

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError
from starlette.datastructures import FormData, UploadFile

from functions._wire import CleanText
from functions.api._body import ParsedBody
from functions.errors import ApiError
from knowledge.errors import ReviewFieldInvalidError
from knowledge.ingestion.registration import Document
from knowledge.ingestion.review import Review, clean_owner, parse_review_by

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_BATCH_ITEMS",
    "BatchIn",
    "BatchItemIn",
    "Owner",
    "ReviewDate",
    "form_review",
    "form_scope",
    "read_batch",
]


def _review_date(value: object) -> date | None:
    if value is None:
        return None
    try:
        if isinstance(value, str):
            return parse_review_by(value)
        raise ReviewFieldInvalidError(("review_by",), "is not a date; write it YYYY-MM-DD, e.g. 2026-03-31")
    except ReviewFieldInvalidError as exc:
        raise PydanticCustomError("review_field_invalid", "review_by {problem}", {"problem": exc.problem}) from None


def _owner(value: str | None) -> str | None:
    try:
        return clean_owner(value)
    except ReviewFieldInvalidError as exc:
        raise PydanticCustomError("review_field_invalid", "owner {problem}", {"problem": exc.problem}) from None


ReviewDate = Annotated[date | None, BeforeValidator(_review_date)]
"""A review date in JSON: `YYYY-MM-DD` text or null, refused with 422 `invalid_request` at its path."""
Owner = Annotated[CleanText | None, AfterValidator(_owner)]
"""An owner in JSON: one line, trimmed, not blank, at most 200 characters, or null."""

MAX_BATCH_ITEMS: Final = 5_000
"""Most documents one batch request registers."""
MAX_BATCH_BYTES: Final = 64 * 1024 * 1024
"""Largest batch request body."""


class BatchItemIn(BaseModel):
    """One document of a batch."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

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
    owner: Owner = None
    """Who answers for the document (one line, at most 200 characters); null for none."""
    review_by: ReviewDate = None
    """When it must be reviewed, `YYYY-MM-DD`; null for none. Past it, the source is overdue."""


class BatchIn(BaseModel):
    """Many documents of one scope."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

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


def form_review(form: FormData) -> Review:
    """The `owner` and `review_by` fields of a multipart body; 422 `invalid_request` at the field's path."""
    fields: dict[str, str | None] = {}
    for name in ("owner", "review_by"):
        raw = form.get(name)
        fields[name] = raw if isinstance(raw, str) else None
        if raw is not None and not isinstance(raw, str):
            _refuse_field(name, "must be a text field, not a file")
    try:
        return Review(owner=clean_owner(fields["owner"]), review_by=parse_review_by(fields["review_by"]))
    except ReviewFieldInvalidError as exc:
        _refuse_field(str(exc.loc[-1]), exc.problem)


def _refuse_field(name: str, problem: str) -> NoReturn:
    details = [{"loc": [name], "msg": f"{name} {problem}", "type": "review_field_invalid"}]
    raise ApiError(422, "invalid_request", "the request does not match the schema", details=details)


def _checked(data: bytes, limit: int, position: int) -> bytes:
    if len(data) > limit:
        raise ApiError(413, "document_too_large", f"item {position} is larger than the {limit}-byte limit")
    if not data:
        raise ApiError(422, "document_empty", f"item {position} is empty")
    return data


def _document(item: BatchItemIn, limit: int, position: int) -> Document:
    data = _checked(item.content.encode(), limit, position)
    return Document(
        data, item.filename or "", title=item.title, media_type=item.media_type, uri=item.uri, owner=item.owner,
        review_by=item.review_by,
    )  # fmt: skip


async def read_batch(body: ParsedBody, limit: int) -> tuple[UUID | None, bool, list[Document]]:
    """The scope and the documents of a batch request (JSON or multipart), from the body its route read."""
    if body.kind == "json":
        batch = BatchIn.model_validate(body.value)
        docs = [_document(item, limit, n) for n, item in enumerate(batch.items)]
        return batch.organization_id, batch.platform, docs
    if body.kind != "form":
        raise ApiError(422, "invalid_request", "send the documents as JSON items or multipart files")
    form = body.form
    organization_id, platform = form_scope(form)
    review = form_review(form)
    files = [f for f in form.getlist("file") if isinstance(f, UploadFile)]
    if not files:
        raise ApiError(422, "file_missing", "send the documents in multipart fields named 'file'")
    if len(files) > MAX_BATCH_ITEMS:
        raise ApiError(422, "batch_too_many_items", f"a batch holds at most {MAX_BATCH_ITEMS} documents")
    docs = [
        Document(
            _checked(await f.read(limit + 1), limit, n),
            f.filename or "document",
            media_type=f.content_type,
            owner=review.owner,
            review_by=review.review_by,
        )
        for n, f in enumerate(files)
    ]
    return organization_id, platform, docs
