"""The `knowledge` context source: hybrid search over the ready knowledge chunks of the subject's scopes.

Items are chunks, best first: the title is the source's title and the chunk's part number, the body the
chunk text, the ref the chunk's source row (`knowledge_source`), the tokens the chunk's measured count,
and no subject key (a document is rarely about one field). A chunk of a document past its review date (the
stored `review_by`, compared with today in UTC by the search statement) carries it in `review_overdue`,
whatever the option `overdue` says: the packer marks it (`mark`) or drops and counts it (`drop`), so the
drop is reported like every other. The organization always comes from
`request.subject`; the options say which scopes join (both default to off), the relevance floor and the
per-source cap (both default to knowledge.search's measured defaults). This module must
never read a scope the options did not ask for, and never write prose.
"""

from __future__ import annotations

from typing import Final

from context.models import ContextItem, ContextRequest, ContextSourceSpec, ResourceRef
from context.options import KnowledgeOptions
from knowledge.embedding.registry import EmbedderLookup, get_embedder
from knowledge.search import DEFAULT_MIN_RELEVANCE, DEFAULT_PER_SOURCE, KnowledgeHit, search
from state.db import Database

__all__ = ["DEFAULT_KNOWLEDGE_LIMIT", "KNOWLEDGE_REF_KIND", "MAX_TITLE_BYTES", "KnowledgeContextSource"]

DEFAULT_KNOWLEDGE_LIMIT: Final = 8
"""Chunks returned when the spec sets no limit."""
KNOWLEDGE_REF_KIND: Final = "knowledge_source"
"""The ref kind of a knowledge item: the source row the chunk belongs to."""
MAX_TITLE_BYTES: Final = 80
"""The longest title, in UTF-8 bytes, that the chunk size arithmetic of `knowledge.documents.chunk` allows for."""


class KnowledgeContextSource:
    """Hybrid search over platform and organization knowledge, filtered through the request's subject."""

    name: Final = "knowledge"
    options_schema: Final = KnowledgeOptions

    def __init__(self, db: Database, embedders: EmbedderLookup = get_embedder) -> None:
        self._db = db
        self._embedders = embedders

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """The best chunks for `request.query` in the scopes the options enable."""
        options = KnowledgeOptions.model_validate(spec.options)
        limit = DEFAULT_KNOWLEDGE_LIMIT if spec.limit is None else spec.limit
        if limit == 0 or not (options.include_platform or options.include_organization):
            return []
        hits = await search(
            self._db,
            request.subject.organization_id,
            request.query,
            include_platform=options.include_platform,
            include_organization=options.include_organization,
            limit=limit,
            embedders=self._embedders,
            min_relevance=DEFAULT_MIN_RELEVANCE if options.min_relevance is None else options.min_relevance,
            per_source=DEFAULT_PER_SOURCE if options.per_source is None else options.per_source,
        )
        return [self._item(hit) for hit in hits]

    def _item(self, hit: KnowledgeHit) -> ContextItem:
        return ContextItem(
            source=self.name,
            kind="knowledge",
            title=_title(hit.source_title, hit.ordinal),
            body=hit.text,
            ref=ResourceRef(kind=KNOWLEDGE_REF_KIND, id=str(hit.source_id)),
            tokens=hit.tokens,
            review_overdue=hit.source_review_by if hit.source_overdue else None,
        )


def _title(source_title: str, ordinal: int) -> str:
    """`<source title> (part N)`, the source title shortened so the whole fits `MAX_TITLE_BYTES`."""
    suffix = f" (part {ordinal + 1})"
    room = MAX_TITLE_BYTES - len(suffix.encode("utf-8"))
    title = " ".join(source_title.split())
    if len(title.encode("utf-8")) > room:
        title = title.encode("utf-8")[: room - 3].decode("utf-8", errors="ignore").rstrip() + "..."
    return title + suffix
