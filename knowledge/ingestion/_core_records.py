"""The records of the ingestion core: what it runs against, its steps, and the outcomes it answers.

`knowledge.ingestion.core` re-exports them. This module must never hold a query, a step's work or a
document's text, nor import the workers these records describe (the bulk core, the steps): their records
live in `knowledge.ingestion._step_records`, below both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import UUID

from knowledge.documents.chunk import DEFAULT_MAX_CHUNKS
from knowledge.documents.extract import ExtractLimits, extract_limits
from knowledge.documents.objects import ObjectStore
from knowledge.embedding.embedder import EmbedderLookup
from knowledge.errors import KnowledgeError
from knowledge.ingestion._step_records import BulkResult
from knowledge.ingestion.pool import IngestPool, shared_pool
from state.db import Database
from state.settings import Settings

__all__ = ["BatchOutcome", "IngestOutcome", "Ingestion", "Json", "SourceNotReadyError", "Step", "Steps"]

R = TypeVar("R")
Json = dict[str, Any]
"""A step's small JSON result: ids and counts."""


class SourceNotReadyError(KnowledgeError):
    """The source is not ready after every batch was embedded; the run retries."""

    code = "knowledge_source_not_ready"
    retryable = True


@dataclass(frozen=True, slots=True)
class Ingestion:
    """What the steps run against: the database, the object store, the embedders and the bounds."""

    db: Database
    """The open pool."""
    store: ObjectStore
    """Where the documents' bytes live."""
    embedders: EmbedderLookup
    """Model id -> embedder (`knowledge.embedding.registry.get_embedder`, or a service's own registry)."""
    pool: IngestPool | None = None
    """The process pool of the bulk core (None: one thread)."""
    max_chunks: int = DEFAULT_MAX_CHUNKS
    """The chunk cap of one source."""
    limits: ExtractLimits | None = None
    """The extraction bounds (None: the process settings')."""
    batch_size: int | None = None
    """Chunks per embedding batch of the resumable shape (None: the embedder's own)."""

    @classmethod
    def configured(
        cls, db: Database, store: ObjectStore, *, embedders: EmbedderLookup, settings: Settings
    ) -> Ingestion:
        """The ingestion a service runs: the settings' workers, chunk cap and extraction bounds."""
        return cls(
            db, store, embedders, shared_pool(settings.ingest_workers), settings.max_chunks_per_source,
            extract_limits(settings),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    """Where a source stands after its steps ran."""

    source_id: UUID
    """The source."""
    ready_models: tuple[str, ...]
    """The models it became (or already was) ready under in this call."""
    failed_reason: str | None = None
    """Why it failed, when a step failed it (the reason stored on it)."""
    chunk_count: int = 0
    """Chunk rows of the last model built."""
    status: str = "done"
    """`done` (every model built ran), `failed` (a step failed it), `skipped` (it was failed before the run:
    retry it first), `deleted` (deleted before or while its steps ran: nothing recorded) or `missing` (no
    such source, and none was deleted)."""
    built: tuple[Json, ...] = field(default=())
    """One small record per model built: `model`, `chunks`, `ready`, and `not_wanted` for a cancelled switch's
    (`deleted` for the build a delete stopped)."""

    @property
    def ready(self) -> bool:
        """Every model built is ready (a cancelled switch's model is no loss)."""
        return all(b["ready"] for b in self.built if not b.get("not_wanted"))


@dataclass(frozen=True, slots=True)
class Step:
    """One named step of a sequence: an async function of the `Ingestion`, answering small JSON."""

    name: str
    """The step's name (a durable engine memoizes its result under it)."""
    fn: Callable[[Ingestion], Awaitable[Any]]
    """What the step does."""


Steps = Generator[Step, Any, R]
"""A sequence: yields steps, receives their results (or has their errors thrown in), returns its outcome."""


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What one bulk run over many sources did."""

    counts: dict[str, int]
    """Sources `ready`, `failed`, `unchanged` and `pending`."""
    seconds: dict[str, float]
    """Seconds of the `extract`, `embed` and `write` stages."""
    result: BulkResult | None = None
    """The per-source outcomes, when the step ran in this process (None when a durable run replayed it)."""
