"""Which briefs cited a source, a chunk's document or a memory, and an organization's segment brief builds.

Reads of the brief receipts (`state.brief_receipts`, migration 0122), for the console and any face. Every act
takes the caller and the organization it reads in (`require_own`: an organization key reads its own only) and
answers that organization's receipts only, even for a platform source that many organizations' briefs cited.
The thing asked about must be one the organization can see: another organization's source or memory answers
404 (`knowledge_source_not_found`, `memory_not_found`) as an unknown id does. Briefs cite a document (its
source's version), not a chunk, so a chunk's "cited by" is its document's. This module only reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from context.sources.knowledge import KNOWLEDGE_REF_KIND
from context.sources.memory import MEMORY_REF_KIND
from functions.actions.scope import Caller, require_own
from knowledge.ingestion.chunk_at import chunk_at, visible_source
from knowledge.ingestion.source_pages import ChunkView
from knowledge.ingestion.sources import SourceView
from memory.pages import MemoryChain, memory_chain
from state.brief_receipts import ReceiptRow, page_citing, page_segments
from state.db import Database
from state.paging import Page

__all__ = ["ChunkCitations", "MemoryCitations", "SourceCitations", "chunk_cited_by", "memory_cited_by",
           "segment_builds", "source_cited_by"]  # fmt: skip

PAGE = 25
"""Receipts on one page of "cited by"."""


@dataclass(frozen=True, slots=True)
class SourceCitations:
    """A source and a page of the organization's briefs that cited it."""

    source: SourceView
    page: Page[ReceiptRow]


@dataclass(frozen=True, slots=True)
class ChunkCitations:
    """A chunk, its source, and a page of the organization's briefs that cited its document."""

    source: SourceView
    chunk: ChunkView
    page: Page[ReceiptRow]


@dataclass(frozen=True, slots=True)
class MemoryCitations:
    """A memory's chain and a page of the organization's briefs that cited any of its revisions."""

    chain: MemoryChain
    page: Page[ReceiptRow]


async def source_cited_by(
    db: Database,
    caller: Caller,
    organization_id: UUID,
    source_id: UUID,
    *,
    cursor: str | None = None,
    limit: int = PAGE,
) -> SourceCitations:
    """The organization's briefs that cited the source (its own, or a platform source), newest first."""
    require_own(caller, organization_id)
    source = await visible_source(db, source_id, organization_id=organization_id)
    page = await page_citing(
        db, organization_id=organization_id, ref_kind=KNOWLEDGE_REF_KIND, ref_ids=[str(source_id)], cursor=cursor,
        limit=limit,
    )  # fmt: skip
    return SourceCitations(source, page)


async def chunk_cited_by(
    db: Database,
    caller: Caller,
    organization_id: UUID,
    source_id: UUID,
    ordinal: int,
    *,
    cursor: str | None = None,
    limit: int = PAGE,
) -> ChunkCitations:
    """A chunk and the organization's briefs that cited its document, newest first."""
    require_own(caller, organization_id)
    source, chunk = await chunk_at(db, source_id, ordinal, organization_id=organization_id)
    page = await page_citing(
        db, organization_id=organization_id, ref_kind=KNOWLEDGE_REF_KIND, ref_ids=[str(source_id)], cursor=cursor,
        limit=limit,
    )  # fmt: skip
    return ChunkCitations(source, chunk, page)


async def memory_cited_by(
    db: Database,
    caller: Caller,
    organization_id: UUID,
    memory_id: UUID,
    *,
    cursor: str | None = None,
    limit: int = PAGE,
) -> MemoryCitations:
    """The organization's briefs that cited any revision of the memory's chain, newest first."""
    require_own(caller, organization_id)
    chain = await memory_chain(db, organization_id=organization_id, memory_id=memory_id)
    ids = [str(c.revision.id) for c in chain.revisions]
    page = await page_citing(
        db, organization_id=organization_id, ref_kind=MEMORY_REF_KIND, ref_ids=ids, cursor=cursor, limit=limit
    )
    return MemoryCitations(chain, page)


async def segment_builds(
    db: Database,
    caller: Caller,
    organization_id: UUID,
    *,
    run_id: UUID | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> Page[ReceiptRow]:
    """The organization's segment briefs (builds, rebuilds, memo hits), of one agent run or all, newest first."""
    require_own(caller, organization_id)
    return await page_segments(db, organization_id=organization_id, run_id=run_id, cursor=cursor, limit=limit)
