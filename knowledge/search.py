"""Hybrid knowledge search: embed the query with the live model, then one call to `knowledge_search`.

One search uses one model. The live model is read first (the organization's row, else the platform row),
the query is embedded with it, and the SQL function checks that the model it is told still is the live
one: a flip in between raises `LiveModelChangedError` inside the database and the search embeds again, so
a query vector is never compared with chunks of another model. The reads run as the tenant, so row-level
security checks the organization a second time behind the function's explicit filter. This module must
never search without an organization, never widen the scope flags, and never hold a transaction open
while an embedding provider answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from uuid import UUID

from pgvector import Vector

from knowledge._sql import QUERIES, translated
from knowledge.db_errors import LiveModelChangedError, NoLiveModelError
from knowledge.embed import get_embedder
from knowledge.ingest import EmbedderLookup
from state.db import Database

__all__ = ["DEFAULT_FUSION", "MAX_SEARCH_LIMIT", "Fusion", "KnowledgeHit", "search"]

MAX_SEARCH_LIMIT: Final = 1000
"""The most hits one search returns."""


@dataclass(frozen=True, slots=True)
class Fusion:
    """How the dense and lexical candidate lists are fused: sum of weight / (k + rank)."""

    dense: float = 1.0
    """Weight of the dense (vector) list; 0 leaves it out."""
    lexical: float = 1.0
    """Weight of the lexical (full-text) list; 0 leaves it out."""
    k: int = 60
    """The reciprocal-rank constant."""
    candidates: int | None = None
    """Candidates read from each list; None reads four times the limit (at least the limit)."""

    def __post_init__(self) -> None:
        if self.dense < 0 or self.lexical < 0 or (self.dense == 0 and self.lexical == 0):
            raise ValueError("fusion weights must be non-negative and not both zero")
        if self.k < 1 or (self.candidates is not None and not 1 <= self.candidates <= MAX_SEARCH_LIMIT):
            raise ValueError(f"k must be positive and candidates within 1..{MAX_SEARCH_LIMIT}")


DEFAULT_FUSION: Final = Fusion()
"""Equal weights and k = 60 (measured on Cranfield: see docs/decisions.md, Knowledge: schema)."""


@dataclass(frozen=True, slots=True)
class KnowledgeHit:
    """One chunk a search returned, best first."""

    chunk_id: int
    """The chunk row."""
    source_id: UUID
    """The source the chunk belongs to (and inherits its tenancy from)."""
    source_title: str
    """The source's title."""
    source_organization_id: UUID | None
    """The source's organization, None for a platform document."""
    ordinal: int
    """The chunk's position in its document (0-based)."""
    text: str
    """The chunk text."""
    tokens: int
    """Its measured token count."""
    embedding_model: str
    """The model it is pinned to: always the live model of the search."""
    score: float
    """The fused reciprocal-rank score."""
    dense_rank: int | None = None
    """Its rank in the dense list, None when it was not a dense candidate."""
    lexical_rank: int | None = None
    """Its rank in the lexical list, None when it was not a lexical candidate."""


async def search(
    db: Database,
    organization_id: UUID,
    query: str,
    *,
    include_platform: bool = False,
    include_organization: bool = False,
    limit: int = 8,
    embedders: EmbedderLookup = get_embedder,
    fusion: Fusion = DEFAULT_FUSION,
) -> list[KnowledgeHit]:
    """The best `limit` ready chunks of the scopes asked for, under the organization's live model."""
    if isinstance(limit, bool) or not 0 <= limit <= MAX_SEARCH_LIMIT:
        raise ValueError(f"limit must be within 0..{MAX_SEARCH_LIMIT}, got {limit!r}")
    if limit == 0 or not (include_platform or include_organization) or not query.strip():
        return []
    for attempt in (1, 2):
        with translated():
            async with db.tenant(organization_id) as conn:
                live = await conn.fetchrow(QUERIES["live_model"], organization_id)
        if live is None:
            raise NoLiveModelError("no knowledge_settings row names a live embedding model for this organization")
        model = live["model_id"]
        vector = (await embedders(model).embed([query]))[0]
        try:
            with translated():
                async with db.tenant(organization_id) as conn:
                    rows = await conn.fetch(
                        QUERIES["knowledge_search"],
                        organization_id,
                        Vector(vector),
                        query,
                        include_platform,
                        include_organization,
                        limit,
                        model,
                        fusion.dense,
                        fusion.lexical,
                        fusion.candidates,
                        fusion.k,
                    )
        except LiveModelChangedError:
            if attempt == 2:
                raise
            continue  # the model flipped between the read and the search: embed with the new one
        return [
            KnowledgeHit(
                chunk_id=r["chunk_id"],
                source_id=r["source_id"],
                source_title=r["source_title"],
                source_organization_id=r["source_organization_id"],
                ordinal=r["ordinal"],
                text=r["text"],
                tokens=r["tokens"],
                embedding_model=r["embedding_model"],
                score=r["score"],
                dense_rank=r["dense_rank"],
                lexical_rank=r["lexical_rank"],
            )
            for r in rows
        ]
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
