"""Knowledge's embedder and scoring settings, handed to memory's relevance read and its writer.

`memory` imports only `state`, so the pieces of knowledge's hybrid scoring it reuses come through here, the
one room that may read both: the organization's live model and its embedder (`live_memory_embedder`, which
`MemoryService(embed=...)` calls at write and the relevance read calls for the question), the live model's
calibrated fusion weights, and knowledge's BM25 settings (`knowledge.search.DEFAULT_FUSION`: k1 and b), so
memory is never scored by a second set of constants. This module must never read or write a memory row.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from knowledge.db_errors import NoLiveModelError
from knowledge.embedding.live_model import LiveModel, live_model
from knowledge.embedding.registry import EmbedderLookup, get_embedder
from knowledge.search import DEFAULT_FUSION
from memory.models import RelevanceQuery
from memory.vectors import EmbeddedTexts, MemoryEmbedder, embed_texts
from state.db import Database

__all__ = ["live_memory_embedder", "relevance_query"]

_UNCALIBRATED = LiveModel("none/none", 1, True)
"""The fusion weights of a read with no live model (BM25 alone then, so only their sum matters)."""


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
    """The question as a relevance read scores it: its live-model vector and the live model's weights.

    The weights are the model's calibrated fusion (migrations/0103); memory's read fuses convexly whatever the
    model's method. With no vector (it cannot be had) the read ranks by BM25 alone: a brief is never failed
    for an embedder that is down.
    """
    try:
        live: LiveModel | None = await live_model(db, organization_id)
    except NoLiveModelError:  # nothing to embed with: BM25 alone
        live = None
    embedded = None
    if text.strip() and live is not None:
        embedded = await embed_texts(_model_embedder(live.model_id, embedders), organization_id, [text])
    return RelevanceQuery(
        text=text,
        vector=None if embedded is None else embedded.vectors[0],
        model=None if embedded is None else embedded.model,
        dense_weight=_UNCALIBRATED.dense_weight if live is None else live.dense_weight,
        lexical_weight=_UNCALIBRATED.lexical_weight if live is None else live.lexical_weight,
        k1=DEFAULT_FUSION.k1,
        b=DEFAULT_FUSION.b,
    )


def _model_embedder(model: str, embedders: EmbedderLookup) -> MemoryEmbedder:
    async def embed(organization_id: UUID, texts: Sequence[str]) -> EmbeddedTexts:
        vectors = await embedders(model).embed(list(texts))
        return EmbeddedTexts(model=model, vectors=[[float(x) for x in row] for row in vectors])

    return embed
