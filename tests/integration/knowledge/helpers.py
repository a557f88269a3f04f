"""Test helpers for knowledge's database half: a second fake model, and a kit that ingests text in a line."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar
from uuid import UUID

import numpy as np

from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.live_model import SWITCH_PROBE_TEXT, register_embedding_model
from knowledge.embedding.registry import Embedder, EmbedderRegistry, Embeddings, FakeEmbedder
from knowledge.ingestion.core import Ingestion, ingest_source
from knowledge.ingestion.registration import register_upload
from knowledge.ingestion.steps import embed_batch, prepare_chunks
from state.db import Database

FAKE = FakeEmbedder.model_id  # test/hash-64
FAKE2 = "test/hash-32"


class SecondFakeEmbedder(FakeEmbedder):
    """Another deterministic model, of another dimension: for switchovers."""

    model_id: ClassVar[str] = FAKE2
    dimensions: ClassVar[int] = 32


class FlakyEmbedder(FakeEmbedder):
    """The fake that raises on its `fail_on`-th batch, as a worker that dies between batches would."""

    def __init__(self, *, batch_size: int = 4, fail_on: int = 2) -> None:
        super().__init__(batch_size=batch_size)
        self.fail_on = fail_on
        self.batches = 0

    async def _embed_batch(self, texts: list[str]) -> Embeddings:
        self.batches += 1
        if self.batches == self.fail_on:
            raise RuntimeError("the worker died between two embedding batches")
        return await super()._embed_batch(texts)


class Kit:
    """Ingests small documents into one test database under the fake models."""

    def __init__(self, db: Database, store: LocalObjectStore) -> None:
        self.db = db
        self.store = store
        self.embedders: dict[str, Embedder] = {FAKE: FakeEmbedder(batch_size=4), FAKE2: SecondFakeEmbedder()}
        self._n = 0

    def lookup(self, model: str) -> Embedder:
        """The embedder lookup the code under test receives."""
        return self.embedders[model]

    def ingestion(self, lookup: Callable[[str], Embedder] | None = None) -> Ingestion:
        """What the ingestion core runs against here: the kit's database, store and embedders (or `lookup`)."""
        return Ingestion(self.db, self.store, lookup or self.lookup)

    async def use_platform_model(self, model: str = FAKE) -> None:
        """Register `model` and name it the platform default (only before any source exists)."""
        await register_embedding_model(self.db, model, dimensions=self.embedders[model].dimensions)
        async with self.db.connection() as conn:
            await conn.execute(
                "UPDATE public.knowledge_settings SET active_embedding_model = $1 WHERE organization_id IS NULL", model
            )

    async def register(self, organization_id: UUID | None, text: str, *, title: str | None = None) -> UUID:
        """Register a Markdown document without ingesting it."""
        self._n += 1
        registered = await register_upload(
            self.db,
            self.store,
            organization_id=organization_id,
            data=text.encode(),
            filename=f"doc{self._n}.md",
            title=title or f"Doc {self._n}",
            media_type="text/markdown",
        )
        return registered.source_id

    async def add(
        self, organization_id: UUID | None, text: str, *, title: str | None = None, lookup: Callable[[str], Embedder]
    ) -> UUID:
        """Register and ingest a Markdown document; it is ready when this returns."""
        source_id = await self.register(organization_id, text, title=title)
        outcome = await ingest_source(self.ingestion(lookup), source_id)
        assert outcome.failed_reason is None, outcome.failed_reason
        return source_id

    async def ingest(self, organization_id: UUID | None, text: str, *, title: str | None = None) -> UUID:
        """`add` with the kit's own embedders."""
        return await self.add(organization_id, text, title=title, lookup=self.lookup)

    async def embedded_pending(self, organization_id: UUID | None, text: str) -> UUID:
        """A pending source whose chunks all hold vectors: the real steps, all but the last one (mark_ready)."""
        source_id = await self.register(organization_id, text)
        await prepare_chunks(self.db, self.store, source_id, FAKE)
        while (await embed_batch(self.db, source_id, self.lookup(FAKE))).remaining:
            pass
        return source_id

    async def set_failed(self, source_id: UUID) -> None:
        """Fail a source behind the code's back (reason `x`), whatever it was, leaving its chunks in place."""
        async with self.db.connection() as conn:
            await conn.execute(
                "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = 'x', pending_since = NULL "
                "WHERE id = $1",
                source_id,
            )


def unit(dimensions: int, seed: int) -> np.ndarray:
    """A random unit vector."""
    vector = np.random.default_rng(seed).standard_normal(dimensions).astype(np.float32)
    return vector / np.linalg.norm(vector)


GATE = "test/gate-32"
"""The model id of `GateEmbedder`: a second model, of another dimension than the live `test/hash-64`."""

GateAction = Callable[[], Awaitable[None]]


class GateEmbedder(FakeEmbedder):
    """The 32-dimension fake with a gate: before returning batch `n`, it awaits the action set for `n`
    (a cancel from another process, uploads arriving, ...), as the world would act while that batch is in
    flight. One batch per chunk; the state is on the class, because the process-wide registry of the CLI
    builds its own instance. `reset()` between tests."""

    model_id: ClassVar[str] = GATE
    dimensions: ClassVar[int] = 32
    pool_safe: ClassVar[bool] = False
    actions: ClassVar[dict[int, GateAction]] = {}
    texts: ClassVar[list[str]] = []
    """Every text embedded after the probe, in order (one per batch)."""

    def __init__(self, *, batch_size: int = 1) -> None:
        super().__init__(batch_size=batch_size)

    @classmethod
    def reset(cls) -> None:
        """Forget the actions and the batches embedded."""
        cls.actions = {}
        cls.texts = []

    @classmethod
    def batches(cls) -> int:
        """Batches embedded so far (the switch's probe text not counted)."""
        return len(cls.texts)

    async def _embed_batch(self, texts: list[str]) -> Embeddings:
        vectors = await super()._embed_batch(texts)
        if texts == [SWITCH_PROBE_TEXT]:
            return vectors
        type(self).texts.extend(texts)
        action = type(self).actions.pop(type(self).batches(), None)
        if action is not None:
            await action()
        return vectors


def ensure_gate_registered(registry: EmbedderRegistry) -> None:
    """Register `GateEmbedder` (once) in a registry (never the process-wide one: other tests list its models)."""
    if GATE not in registry:
        registry.register(GATE, GateEmbedder, dimensions=GateEmbedder.dimensions)


async def chunk_counts(db: Database, model: str) -> dict[str, int]:
    """The chunks and readiness rows of `model` anywhere, and the chunks with no readiness row under it."""
    async with db.connection() as conn:
        row = await conn.fetchrow(
            "SELECT (SELECT count(*) FROM agent.knowledge_chunks WHERE embedding_model = $1) AS chunks,"
            " (SELECT count(*) FROM agent.knowledge_source_models WHERE embedding_model = $1) AS rows,"
            " (SELECT count(*) FROM agent.knowledge_chunks c WHERE c.embedding_model = $1 AND NOT EXISTS ("
            "   SELECT 1 FROM agent.knowledge_wanted_models w"
            "    WHERE w.source_id = c.source_id AND w.embedding_model = $1)) AS unwanted",
            model,
        )
    assert row is not None
    return {"chunks": row["chunks"], "rows": row["rows"], "unwanted": row["unwanted"]}
