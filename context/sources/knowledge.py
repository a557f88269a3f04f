"""The `knowledge` context source: hybrid search over the ready knowledge chunks of the subject's scopes.

Items are chunks, best first: the title is the source's title and the chunk's part number, the body the
chunk text, the ref the chunk's source row (`knowledge_source`), the tokens the chunk's measured count,
and no subject key (a document is rarely about one field). A chunk of a document past its review date (the
stored `review_by`, compared with today in UTC by the search statement) carries it in `review_overdue`,
whatever the option `overdue` says: the packer marks it (`mark`) or drops and counts it (`drop`), so the
drop is reported like every other. The organization always comes from
`request.subject`; the options say which scopes join (both default to off), the relevance floor and the
per-source cap (both default to knowledge.search's measured defaults). In explain mode
(`retrieve_explained`) the same search also returns the candidates it cut, each named with its rule
(`relevance_floor`, `per_source_cap`, `beyond_limit`); every item carries the rule that placed it
(`placed_by`: `rank`, or `cap_fill` for a chunk past its document's cap that fills the room the limit
left). This module must never read a scope the options did not ask for, and never write prose.
"""

from __future__ import annotations

from typing import Any, Final

from context.models import ContextItem, ContextRequest, ContextSourceSpec, CutCandidate, ResourceRef
from context.options import KnowledgeOptions
from knowledge.embedding.registry import EmbedderLookup, get_embedder
from knowledge.search import (
    DEFAULT_KEEP_TOP,
    DEFAULT_MIN_RELEVANCE,
    DEFAULT_PER_SOURCE,
    KnowledgeHit,
    search,
    search_explained,
)
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
        arguments = self._arguments(request, spec)
        if arguments is None:
            return []
        return [self._item(hit) for hit in await search(**arguments)]

    async def retrieve_explained(
        self, request: ContextRequest, spec: ContextSourceSpec
    ) -> tuple[list[ContextItem], list[CutCandidate]]:
        """`retrieve`'s items, and the chunks the floor, the per-source cap or the limit cut, best first."""
        arguments = self._arguments(request, spec)
        if arguments is None:
            return [], []
        hits, cut = await search_explained(**arguments)
        cuts = [self._cut(hit, rank, arguments) for rank, hit in enumerate(cut, start=len(hits) + 1)]
        return [self._item(hit) for hit in hits], cuts

    def _arguments(self, request: ContextRequest, spec: ContextSourceSpec) -> dict[str, Any] | None:
        """The search's arguments for this request and spec, or None when the spec reads nothing."""
        options = KnowledgeOptions.model_validate(spec.options)
        limit = DEFAULT_KNOWLEDGE_LIMIT if spec.limit is None else spec.limit
        if limit == 0 or not (options.include_platform or options.include_organization):
            return None
        return {
            "db": self._db,
            "organization_id": request.subject.organization_id,
            "query": request.query,
            "include_platform": options.include_platform,
            "include_organization": options.include_organization,
            "limit": limit,
            "embedders": self._embedders,
            "min_relevance": DEFAULT_MIN_RELEVANCE if options.min_relevance is None else options.min_relevance,
            "keep_top": DEFAULT_KEEP_TOP if options.keep_top is None else options.keep_top,
            "per_source": DEFAULT_PER_SOURCE if options.per_source is None else options.per_source,
        }

    def _cut(self, hit: KnowledgeHit, rank: int, arguments: dict[str, Any]) -> CutCandidate:
        rule = hit.cut or "beyond_limit"
        cosine = "" if hit.dense_distance is None else f"cosine {1 - hit.dense_distance:.2f}, "
        messages = {
            "relevance_floor": f"{cosine}under the relevance floor {arguments['min_relevance']:.2f}"
            + (
                f" and not in either half's top {arguments['keep_top']} above the lower floor"
                if arguments["keep_top"]
                else ""
            ),
            "per_source_cap": f"past the cap of {arguments['per_source']} chunks from one document, and no room "
            "left for it after every other document's candidates",
            "beyond_limit": f"ranked past the limit of {arguments['limit']}",
        }
        return CutCandidate(
            source=self.name,
            kind="knowledge",
            ref=ResourceRef(kind=KNOWLEDGE_REF_KIND, id=str(hit.source_id)),
            title=_title(hit.source_title, hit.ordinal),
            tokens=hit.tokens,
            rank=rank,
            score=hit.score,
            rule=rule,
            message=messages[rule],
        )

    def _item(self, hit: KnowledgeHit) -> ContextItem:
        return ContextItem(
            source=self.name,
            kind="knowledge",
            title=_title(hit.source_title, hit.ordinal),
            body=hit.text,
            ref=ResourceRef(kind=KNOWLEDGE_REF_KIND, id=str(hit.source_id)),
            tokens=hit.tokens,
            review_overdue=hit.source_review_by if hit.source_overdue else None,
            placed_by=hit.placed,
        )


def _title(source_title: str, ordinal: int) -> str:
    """`<source title> (part N)`, the source title shortened so the whole fits `MAX_TITLE_BYTES`."""
    suffix = f" (part {ordinal + 1})"
    room = MAX_TITLE_BYTES - len(suffix.encode("utf-8"))
    title = " ".join(source_title.split())
    if len(title.encode("utf-8")) > room:
        title = title.encode("utf-8")[: room - 3].decode("utf-8", errors="ignore").rstrip() + "..."
    return title + suffix
