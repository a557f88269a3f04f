"""Paged reads of knowledge sources for an admin: a scope's sources, one source's chunks, its progress.

- `page_sources(db, organization_id, status=, overdue=, title=, cursor=, limit=)`: a `Page[SourceRow]`,
  newest first, each row a `SourceView` plus the model it is shown under (its scope's live model when it is
  wanted under it) and its chunk counts there. Filters: one status, only the overdue ones, a text the title
  contains (any case). The page and its count read the scope through `knowledge_sources_page_idx`
  (migrations/0102).
- `page_chunks(db, source_id, organization_id=, operator=, model=, cursor=, limit=)`: a `Page[ChunkView]`
  of one source's chunks under one model (default: the model the source is shown under), full text, in
  ordinal order.
- `source_progress(db, source_id, organization_id=, operator=)`: where a source is (`SourceProgress`):
  its stage and the chunks done under each model it is wanted under.

Scope: `organization_id` names the caller's scope (None: the platform's); a source outside it is
`SourceNotFoundError`, exactly as an unknown id. With `operator`, `organization_id` None reads any source.
Cursors follow `state.paging`. This module must never write.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

import asyncpg

from knowledge._sql import QUERIES, translated
from knowledge.errors import SourceNotFoundError
from knowledge.ingestion.sources import ModelReadiness, SourceView, get_source, model_readiness
from state.db import Database
from state.paging import (
    Int4,
    Order,
    Page,
    SortKey,
    fingerprint,
    keyset_sql,
    order_of,
    page_both,
    page_size,
    read_cursor,
)

__all__ = [
    "SOURCE_SORTS",
    "ChunkView",
    "SourceProgress",
    "SourceRow",
    "Stage",
    "page_chunks",
    "page_sources",
    "source_in_scope",
    "source_progress",
]

Stage = Literal["extracting", "embedding", "finishing", "ready", "failed", "deleting"]
"""Where a source is: `extracting` (text and chunks not written yet under some wanted model), `embedding`
(chunks written, not all embedded), `finishing` (all embedded, not yet marked ready), or its final status."""


@dataclass(frozen=True, slots=True)
class SourceRow:
    """A source as a page of sources shows it."""

    source: SourceView
    """Identity, status, why it failed, attempts, owner, review date, overdue."""
    created_at: datetime
    """When it was registered (its place in the list)."""
    embedding_model: str | None
    """The model it is shown under, None before it is wanted under any."""
    chunk_count: int | None
    """Its chunks under that model, None until they are written."""
    embedded_count: int
    """Those chunks embedded so far."""

    def as_json(self) -> dict[str, Any]:
        """The row as JSON: the source's identity plus its model, chunks and timestamps."""
        v = self.source
        return {
            **v.identity_json(),
            "pending_since": None if v.pending_since is None else v.pending_since.isoformat(),
            "updated_at": v.updated_at.isoformat(),
            "created_at": self.created_at.isoformat(),
            "embedding_model": self.embedding_model,
            "chunk_count": self.chunk_count,
            "embedded_count": self.embedded_count,
        }


@dataclass(frozen=True, slots=True)
class ChunkView:
    """One chunk of a source, full text."""

    id: int
    """The chunk's id."""
    source_id: UUID
    """Its source."""
    embedding_model: str
    """The model it belongs to."""
    ordinal: int
    """Its place in the document, from 0."""
    text: str
    """Its whole text."""
    tokens: int
    """Its size in tokens."""
    embedded: bool
    """Whether its embedding is written."""

    def as_json(self) -> dict[str, Any]:
        """The chunk as JSON."""
        return {
            "id": self.id,
            "source_id": str(self.source_id),
            "embedding_model": self.embedding_model,
            "ordinal": self.ordinal,
            "text": self.text,
            "tokens": self.tokens,
            "embedded": self.embedded,
        }


@dataclass(frozen=True, slots=True)
class SourceProgress:
    """How far a source's ingestion is."""

    source_id: UUID
    """The source."""
    status: str
    """pending, ready, failed or deleting."""
    stage: Stage
    """Where it is (see `Stage`)."""
    attempts: int
    """How many times ingestion was started."""
    pending_since: datetime | None
    """When the current attempt started, while pending."""
    failure_reason: str | None
    """Why it failed."""
    chunks_done: int
    """Chunks embedded, over every model it is wanted under."""
    chunks_total: int | None
    """Chunks written, over every model; None while one model's chunks are not written yet."""
    models: list[ModelReadiness]
    """Its readiness under each model it is wanted under."""

    def as_json(self) -> dict[str, Any]:
        """The progress as JSON."""
        return {
            "source_id": str(self.source_id),
            "status": self.status,
            "stage": self.stage,
            "attempts": self.attempts,
            "pending_since": None if self.pending_since is None else self.pending_since.isoformat(),
            "failure_reason": self.failure_reason,
            "chunks_done": self.chunks_done,
            "chunks_total": self.chunks_total,
            "models": [
                {
                    "embedding_model": m.model,
                    "status": m.status,
                    "chunk_count": m.chunk_count,
                    "embedded_count": m.embedded_count,
                    "failure_reason": m.failure_reason,
                }
                for m in self.models
            ],
        }


def _row(r: asyncpg.Record) -> SourceRow:
    view = SourceView(
        id=r["id"], organization_id=r["organization_id"], kind=r["kind"], title=r["title"], uri=r["uri"],
        status=r["status"], failure_reason=r["failure_reason"], attempts=r["attempts"],
        pending_since=r["pending_since"], updated_at=r["updated_at"], owner=r["owner"], review_by=r["review_by"],
        overdue=r["overdue"],
    )  # fmt: skip
    return SourceRow(view, r["created_at"], r["embedding_model"], r["chunk_count"], r["embedded_count"] or 0)


def _text(value: str | None) -> str | None:
    return value.strip() if value and value.strip() else None


SOURCE_SORTS: dict[str, SortKey] = {
    "created": SortKey("s.created_at", datetime, descending=True),  # knowledge_sources_page_idx (0102)
    "title": SortKey("s.title", str),  # knowledge_sources_title_idx (0118)
}
"""The columns the sources list sorts by, each through an index; `created` newest first is the default."""

_KEYSET_LINE = "(s.created_at, s.id) < ($6::timestamptz, $7::uuid)"
_ORDER_LINE = "ORDER BY s.created_at DESC, s.id DESC"


def _sources_sql(order: Order, *, backward: bool, first: bool) -> str:
    """`page_sources` under `order`, reading after (or, `backward`, before) a position, or from the start."""
    base = QUERIES["page_sources"]
    if _KEYSET_LINE not in base or _ORDER_LINE not in base:
        raise RuntimeError("page_sources changed: update its sorted variants")
    keyset, ordering = keyset_sql(order, backward=backward, value=6, tie="s.id")
    return base.replace(_KEYSET_LINE, "true" if first else keyset).replace(_ORDER_LINE, f"ORDER BY {ordering}")


async def page_sources(
    db: Database,
    organization_id: UUID | None,
    *,
    status: str | None = None,
    overdue: bool = False,
    title: str | None = None,
    sort: str | None = None,
    direction: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[SourceRow]:
    """A page of one scope's sources (None: the platform), newest first unless sorted, filtered.

    Filters: status, overdue, title text. `sort` is a key of `SOURCE_SORTS`; `prev_cursor` reads back.
    """
    order = order_of(SOURCE_SORTS, sort, direction, "created")
    text = _text(title)
    scope = order.scope(organization_id, status, overdue, text)
    position, backward = read_cursor(cursor, "sources", scope, (order.key.kind, UUID))
    statement = _sources_sql(order, backward=backward, first=position is None)
    with translated():
        async with db.connection() as conn:
            total = int(await conn.fetchval(QUERIES["count_sources_filtered"], organization_id, overdue, status, text))
            rows = await conn.fetch(
                statement, organization_id, overdue, status, text, page_size(limit) + 1, *(position or ())
            )
    by_title = order.name == "title"
    return page_both(
        [_row(r) for r in rows], limit=limit, total=total, listing="sources", scope=scope,
        position=lambda s: (s.source.title if by_title else s.created_at, s.source.id),
        cursor_given=position is not None, backward=backward,
    )  # fmt: skip


async def source_in_scope(
    db: Database, source_id: UUID, *, organization_id: UUID | None, operator: bool = False
) -> SourceView:
    """The source if the caller's scope holds it; `SourceNotFoundError` otherwise, as for an unknown id."""
    view = await get_source(db, source_id)
    if (organization_id is not None or not operator) and view.organization_id != organization_id:
        raise SourceNotFoundError(f"no knowledge source {source_id}")
    return view


async def page_chunks(
    db: Database,
    source_id: UUID,
    *,
    organization_id: UUID | None,
    operator: bool = False,
    model: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[ChunkView]:
    """A page of one source's chunks in ordinal order, full text, under `model` (default: its shown model).

    Pages both ways: the page's `prev_cursor` reads the chunks before it.
    """
    await source_in_scope(db, source_id, organization_id=organization_id, operator=operator)
    with translated():
        async with db.connection() as conn:
            shown = model or await conn.fetchval(QUERIES["source_shown_model"], source_id)
            scope = fingerprint(source_id, shown)
            position, backward = read_cursor(cursor, "chunks", scope, (Int4,))
            if shown is None:
                return Page([], 0, None)
            total = int(await conn.fetchval(QUERIES["count_source_chunks"], source_id, shown))
            query = QUERIES["page_source_chunks_before"] if backward else QUERIES["page_source_chunks"]
            at = -1 if position is None else position[0]
            rows = await conn.fetch(query, source_id, shown, at, page_size(limit) + 1)
    chunks = [
        ChunkView(r["id"], r["source_id"], r["embedding_model"], r["ordinal"], r["text"], r["tokens"], r["embedded"])
        for r in rows
    ]
    return page_both(
        chunks, limit=limit, total=total, listing="chunks", scope=scope, position=lambda c: (c.ordinal,),
        cursor_given=position is not None, backward=backward,
    )  # fmt: skip


_FINAL: dict[str, Stage] = {"ready": "ready", "failed": "failed", "deleting": "deleting"}


def _stage(view: SourceView, models: list[ModelReadiness]) -> Stage:
    if view.status in _FINAL:
        return _FINAL[view.status]
    if not models or any(m.chunk_count is None for m in models):
        return "extracting"
    if any(m.embedded_count < (m.chunk_count or 0) for m in models):
        return "embedding"
    return "finishing"


async def source_progress(
    db: Database, source_id: UUID, *, organization_id: UUID | None, operator: bool = False
) -> SourceProgress:
    """Where a source's ingestion is: its stage and the chunks embedded of those written, per model."""
    view = await source_in_scope(db, source_id, organization_id=organization_id, operator=operator)
    models = [m for m in await model_readiness(db, [source_id]) if m.source_id == source_id]
    written = [m.chunk_count for m in models]
    return SourceProgress(
        source_id=source_id, status=view.status, stage=_stage(view, models), attempts=view.attempts,
        pending_since=view.pending_since, failure_reason=view.failure_reason,
        chunks_done=sum(m.embedded_count for m in models),
        chunks_total=None if not models or None in written else sum(c or 0 for c in written),
        models=models,
    )  # fmt: skip
