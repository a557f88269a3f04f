"""Knowledge's embedder and scoring settings, handed to memory's relevance read and its writer.

`memory` imports only `state`, so the pieces of knowledge's hybrid scoring it reuses come through here, the
one room that may read both: the organization's live model and its embedder (`live_memory_embedder`, which
`MemoryService(embed=...)` calls at write and the relevance read calls for the question), and the measured
fusion defaults (`knowledge.search.DEFAULT_FUSION`: weights, BM25 k1 and b), so memory is never scored by a
second set of constants. This module must never read or write a memory row.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from knowledge.embedding.live_model import live_model
from knowledge.embedding.registry import EmbedderLookup, get_embedder
from knowledge.search import DEFAULT_FUSION
from memory.models import RelevanceQuery
from memory.vectors import EmbeddedTexts, MemoryEmbedder, embed_texts
from state.db import Database

__all__ = ["live_memory_embedder", "relevance_query"]


def live_memory_embedder(db: Database, embedders: EmbedderLookup = get_embedder) -> MemoryEmbedder:
    """A `MemoryEmbedder` over the organization's live model (its row, else the platform's)."""

    async def embed(organization_id: UUID, texts: Sequence[str]) -> EmbeddedTexts:
        model = (await live_model(db, organization_id)).model_id
        if not texts:
            return EmbeddedTexts(model=model, vectors=[])
        vectors = await embedders(model).embed(list(texts))
        return EmbeddedTexts(model=model, vectors=[[float(x) for x in row] for row in vectors])

    return embed


async def relevance_query(db: Database, organization_id: UUID, text: str, embedders: EmbedderLookup) -> RelevanceQuery:
    """The question as a relevance read scores it: its live-model vector (None if it cannot be had) and the fusion.

    With no vector the read ranks by BM25 alone (a brief is never failed for an embedder that is down).
    """
    embedded = None
    if text.strip():
        embedded = await embed_texts(live_memory_embedder(db, embedders), organization_id, [text])
    return RelevanceQuery(
        text=text,
        vector=None if embedded is None else embedded.vectors[0],
        model=None if embedded is None else embedded.model,
        dense_weight=DEFAULT_FUSION.dense,
        lexical_weight=DEFAULT_FUSION.lexical,
        k1=DEFAULT_FUSION.k1,
        b=DEFAULT_FUSION.b,
    )
