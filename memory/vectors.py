"""The vectors of memory's relevance read: stored at write under the live model, filled in for the rest.

`memory` imports no other room, so it does not embed: whoever builds the service hands it a
`MemoryEmbedder`, a callable that embeds texts with an organization's live model and names that model
(`context.sources.memory_vectors.live_memory_embedder` wires knowledge's). `MemoryService.remember` embeds the
text before its transaction (never holding one open while a provider answers) and stores the vector in the
transaction that appends the revision. A failed embedding never refuses a memory: the revision is written
without a vector and the relevance read ranks it by BM25 alone until `embed_missing` fills it in, which is
also the step that embeds live memories under a new live model after a switchover (docs/decisions.md,
"Memory"). This module must never decide which memories a subject reads.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

from memory.repository import QUERIES
from state.db import Connection, Database

__all__ = ["EmbeddedTexts", "MemoryEmbedder", "embed_missing", "embed_texts", "store_vectors"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddedTexts:
    """Texts embedded with one model."""

    model: str
    """The model id the vectors belong to."""
    vectors: list[list[float]]
    """One vector per text, in input order."""


MemoryEmbedder = Callable[[UUID, Sequence[str]], Awaitable[EmbeddedTexts]]
"""Embeds texts with an organization's live model: `await embed(organization_id, texts)`."""


async def embed_texts(
    embed: MemoryEmbedder | None, organization_id: UUID, texts: Sequence[str]
) -> EmbeddedTexts | None:
    """The texts' vectors, or None when there is no embedder or it failed (logged: the write goes on)."""
    if embed is None or not texts:
        return None
    try:
        return await embed(organization_id, texts)
    except Exception:  # a provider down, no live model: the memory is still written, ranked lexically
        _log.warning("memory embedding failed for organization %s; written without a vector", organization_id,
                     exc_info=True)  # fmt: skip
        return None


async def store_vectors(conn: Connection, memory_ids: Sequence[UUID], embedded: EmbeddedTexts) -> None:
    """Store one vector per revision under `embedded.model`."""
    texts = ["[" + ",".join(repr(float(x)) for x in vector) + "]" for vector in embedded.vectors]  # vector's text form
    await conn.execute(QUERIES["store_memory_embeddings"], list(memory_ids), embedded.model, texts)


async def embed_missing(db: Database, organization_id: UUID, embed: MemoryEmbedder, *, batch: int = 256) -> int:
    """Embed every live memory of the organization with no vector under its live model; answer how many."""
    done = 0
    probe = await embed(organization_id, [])
    while True:
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["live_memories_without_vector"], organization_id, probe.model, batch)
        if not rows:
            return done
        embedded = await embed(organization_id, [r["text"] for r in rows])
        async with db.connection() as conn:
            await store_vectors(conn, [r["id"] for r in rows], embedded)
        done += len(rows)
        if embedded.model != probe.model:  # the live model flipped meanwhile: follow it
            probe = embedded
