"""The vectors of memory's relevance read: stored at write under the live model, filled in for the rest.

`memory` imports no other room, so it does not embed: whoever builds the service hands it a
`MemoryEmbedder`, a callable that embeds texts with an organization's live model and names that model
(`context.sources.memory_vectors.live_memory_embedder` wires knowledge's). `MemoryService.remember` embeds the
text before its transaction (never holding one open while a provider answers) and stores the vector in the
transaction that appends the revision. A failed embedding never refuses a memory: the revision is written
without a vector and the relevance read ranks it by BM25 alone until a vector is filled in. In production
only a switchover fills vectors: it embeds the live memories of the organizations it switches under its new
model before it flips, and those written meanwhile right after (`fill_vectors`, wired by
`functions._memory_switch`, counted by `vector_coverage` in the switch's progress; docs/decisions.md,
"Memory"). `embed_missing` fills one organization's missing vectors under its live model; the benches and
tests call it, and no production path does yet, so a memory whose embedding failed outside a switchover
keeps no vector until the next one. This module must never decide
which memories a subject reads.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from memory.repository import QUERIES
from state.db import Connection, Database

__all__ = [
    "EmbeddedTexts",
    "FilledVectors",
    "MemoryEmbedder",
    "VectorCoverage",
    "embed_missing",
    "embed_texts",
    "fill_vectors",
    "store_vectors",
    "vector_coverage",
]

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
    """Embed every live memory of the organization with no vector under its live model; answer how many.

    Called by the benches and tests only: no production path calls it (a switchover uses `fill_vectors`).
    """
    done = 0
    model = (await embed(organization_id, [])).model
    while True:
        filled = await fill_vectors(db, [organization_id], model, embed, most=batch, batch=batch)
        if not filled.embedded:
            return done
        done += filled.embedded
        model = filled.model  # the live model flipped meanwhile: follow it


@dataclass(frozen=True)
class FilledVectors:
    """What one `fill_vectors` call embedded."""

    embedded: int
    """Memories given a vector (0: none of the organizations' live memories lacks one under the model)."""
    model: str
    """The model the embedder answered last (the asked one unless the embedder follows a flip)."""


async def fill_vectors(
    db: Database,
    organization_ids: Sequence[UUID],
    model: str,
    embed: MemoryEmbedder,
    *,
    most: int,
    batch: int = 256,
) -> FilledVectors:
    """Embed up to `most` live memories of the organizations that hold no vector under `model`, oldest first.

    Resumable: a memory with a vector under the model is never read again, so a call after a crash or a
    retry continues where the last one stopped and embeds nothing twice. A bounded call keeps a durable step
    short (a switchover's fill runs as many as it needs). The embedder is called once per organization per
    batch, and the vectors are stored under the model it names.
    """
    done = 0
    answered = model
    while done < most:
        async with db.connection() as conn:
            rows = await conn.fetch(
                QUERIES["live_memories_without_vector"], list(organization_ids), model, min(batch, most - done)
            )
        if not rows:
            break
        by_org: dict[UUID, list[Any]] = {}
        for row in rows:
            by_org.setdefault(row["organization_id"], []).append(row)
        for organization_id, group in by_org.items():
            embedded = await embed(organization_id, [r["text"] for r in group])
            async with db.connection() as conn:
                await store_vectors(conn, [r["id"] for r in group], embedded)
            answered = embedded.model
        done += len(rows)
        if answered != model:  # the embedder answered another model: the rows it lacks are not these
            break
    return FilledVectors(embedded=done, model=answered)


@dataclass(frozen=True)
class VectorCoverage:
    """How many live memories of some organizations hold a vector under one model."""

    live: int
    """Live memories."""
    embedded: int
    """Of them, those with a vector under the model."""

    @property
    def pending(self) -> int:
        """Live memories still without one."""
        return self.live - self.embedded


async def vector_coverage(db: Database, organization_ids: Sequence[UUID], model: str) -> VectorCoverage:
    """The organizations' live memories and how many hold a vector under `model` (a switchover's progress)."""
    async with db.connection() as conn:
        row = await conn.fetchrow(QUERIES["memory_vector_coverage"], list(organization_ids), model)
    assert row is not None
    return VectorCoverage(live=row["live"], embedded=row["embedded"])
