"""Knowledge's embedder and scoring settings, handed to memory's relevance read and its writer.

`memory` imports only `state`, so the pieces of knowledge's hybrid scoring it reuses come through here, the
one room that may read both: the organization's live model and its embedder (`live_memory_embedder`, which
`MemoryService(embed=...)` calls at write and the relevance read calls for the question; `model_memory_embedder`,
one named model, which a switchover's fill calls before its model is live), the live model's calibrated fusion
weights, and knowledge's BM25 settings (`knowledge.search.DEFAULT_FUSION`: k1 and b), so memory is never scored
by a second set of constants. This module must never read or write a memory row.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from uuid import UUID

import knowledge.search
from knowledge.embedding.live_model import LiveModel, live_model
from knowledge.embedding.registry import EmbedderLookup, get_embedder
from knowledge.errors import NoLiveModelError
from knowledge.search import DEFAULT_FUSION
from memory.models import RelevanceQuery
from memory.vectors import EmbeddedTexts, MemoryEmbedder, embed_texts
from state.db import Database

__all__ = ["live_memory_embedder", "model_memory_embedder", "relevance_query"]

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


def model_memory_embedder(model: str, embedders: EmbedderLookup = get_embedder) -> MemoryEmbedder:
    """A `MemoryEmbedder` over one named model, whatever is live.

    A switchover's fill embeds under its new model before the flip makes it live.
    """

    async def embed(_organization_id: UUID, texts: Sequence[str]) -> EmbeddedTexts:
        if not texts:
            return EmbeddedTexts(model=model, vectors=[])
        vectors = await embedders(model).embed(list(texts))
        return EmbeddedTexts(model=model, vectors=[[float(x) for x in row] for row in vectors])

    return embed


_QUESTION_MODELS_MAX = 10_000
_question_models: dict[tuple[str, UUID], tuple[LiveModel, float]] = {}
"""(database URL, organization) -> (live model, monotonic time it was read), for the question's vector."""


async def _question_model(db: Database, organization_id: UUID) -> LiveModel | None:
    """The live model (and its weights) for a question, remembered for `knowledge.search.LIVE_MODEL_TTL_S`.

    A warm brief then sends no statement for it, as knowledge's search does. A remembered model that is no
    longer live is safe for memory: a switchover embeds every live memory under the new model before its flip
    and keeps the old model's vectors, so the question's old-model vector still meets the memories' (a memory
    remembered after the flip ranks by BM25 until the model is read again). None: no live model at all.
    """
    key = (db.url, organization_id)
    entry = _question_models.get(key)
    if entry is not None and time.monotonic() - entry[1] <= knowledge.search.LIVE_MODEL_TTL_S:
        return entry[0]
    try:
        live = await live_model(db, organization_id)
    except NoLiveModelError:  # nothing to embed with: BM25 alone
        return None
    if len(_question_models) >= _QUESTION_MODELS_MAX:
        _question_models.clear()
    _question_models[key] = (live, time.monotonic())
    return live


async def relevance_query(db: Database, organization_id: UUID, text: str, embedders: EmbedderLookup) -> RelevanceQuery:
    """The question as a relevance read scores it: its live-model vector and the live model's weights.

    The weights are the model's calibrated fusion (migrations/0103); memory's read fuses convexly whatever the
    model's method. With no vector (it cannot be had) the read ranks by BM25 alone: a brief is never failed
    for an embedder that is down.
    """
    live = await _question_model(db, organization_id)
    embedded = None
    if text.strip() and live is not None:
        embedded = await embed_texts(model_memory_embedder(live.model_id, embedders), organization_id, [text])
    return RelevanceQuery(
        text=text,
        vector=None if embedded is None else embedded.vectors[0],
        model=None if embedded is None else embedded.model,
        dense_weight=_UNCALIBRATED.dense_weight if live is None else live.dense_weight,
        lexical_weight=_UNCALIBRATED.lexical_weight if live is None else live.lexical_weight,
        k1=DEFAULT_FUSION.k1,
        b=DEFAULT_FUSION.b,
    )
