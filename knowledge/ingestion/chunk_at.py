"""One chunk of a source by its ordinal, under the source's shown model: the console's chunk page.

The scope: another organization's source is `SourceNotFoundError` (404 `knowledge_source_not_found`), as an
unknown id or chunk is; a platform source is visible to every organization, as its briefs read it. This
module only reads.
"""

from __future__ import annotations

from uuid import UUID

from knowledge._sql import QUERIES, translated
from knowledge.errors import SourceNotFoundError
from knowledge.ingestion.source_pages import ChunkView
from knowledge.ingestion.sources import SourceView, get_source
from state.db import Database

__all__ = ["chunk_at", "visible_source"]


async def visible_source(db: Database, source_id: UUID, *, organization_id: UUID) -> SourceView:
    """The source if the organization's briefs can read it (its own, or a platform source); else not found."""
    view = await get_source(db, source_id)
    if view.organization_id not in (organization_id, None):
        raise SourceNotFoundError(f"no knowledge source {source_id}")
    return view


async def chunk_at(
    db: Database, source_id: UUID, ordinal: int, *, organization_id: UUID
) -> tuple[SourceView, ChunkView]:
    """The source and its chunk at `ordinal` (from 0), for an organization that can read the source."""
    view = await visible_source(db, source_id, organization_id=organization_id)
    with translated():
        async with db.connection() as conn:
            shown = await conn.fetchval(QUERIES["source_shown_model"], source_id)
            row = (
                None
                if shown is None
                else await conn.fetchrow(QUERIES["page_source_chunks"], source_id, shown, ordinal - 1, 1)
            )
    if row is None or row["ordinal"] != ordinal:
        raise SourceNotFoundError(f"the knowledge source {source_id} has no chunk {ordinal}")
    chunk = ChunkView(
        row["id"], row["source_id"], row["embedding_model"], row["ordinal"], row["text"], row["tokens"], row["embedded"]
    )
    return view, chunk
