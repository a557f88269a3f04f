"""Search an organization's knowledge: the act of `POST /v1/knowledge/search`, the console and `ac-context search`.

A search reads the organization's (and, when asked, the platform's) ready chunks under its live model
(`knowledge.search.search`), on a standby that has what the organization wrote. It needs the database and the
embedders only, so `ac-context search` loads no context source, builder or object store for it. This module
must never write.
"""

from __future__ import annotations

from uuid import UUID

from functions.actions.scope import Caller, require_own
from knowledge.embedding.registry import EmbedderLookup
from knowledge.search import (
    DEFAULT_FUSION,
    DEFAULT_KEEP_TOP,
    DEFAULT_MIN_RELEVANCE,
    DEFAULT_PER_SOURCE,
    Fusion,
    KnowledgeHit,
    search,
)
from state.db import Database

__all__ = ["search_knowledge"]


async def search_knowledge(
    db: Database,
    embedders: EmbedderLookup,
    caller: Caller,
    organization_id: UUID,
    query: str,
    *,
    limit: int = 8,
    include_platform: bool = True,
    include_organization: bool = True,
    min_relevance: float = DEFAULT_MIN_RELEVANCE,
    keep_top: int = DEFAULT_KEEP_TOP,
    per_source: int | None = DEFAULT_PER_SOURCE,
    fusion: Fusion = DEFAULT_FUSION,
) -> list[KnowledgeHit]:
    """The best chunks for a query under the organization's live model (`knowledge.search.search`)."""
    require_own(caller, organization_id)
    return await db.on_standby(organization_id, lambda: search(
        db, organization_id, query, include_platform=include_platform, include_organization=include_organization,
        limit=limit, embedders=embedders, min_relevance=min_relevance, keep_top=keep_top, per_source=per_source,
        fusion=fusion,
    ))  # fmt: skip
