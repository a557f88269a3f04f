"""The small records the ingestion steps and the bulk core return: ids and counts, so a result stays small.

This module must never hold a document's text or a vector.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

__all__ = [
    "BulkResult",
    "EmbeddedBatch",
    "FailedMark",
    "PreparedChunks",
    "ReadyCheck",
    "RegisteredSource",
    "SourceOutcome",
]


@dataclass(frozen=True, slots=True)
class RegisteredSource:
    """A registered source, new or the one that already had this identity in its scope."""

    source_id: UUID
    """The source row."""
    created: bool
    """False when the same URI or content was already registered in this scope."""
    status: str
    """pending, ready or failed."""
    models: tuple[str, ...]
    """The models it still has to be made ready under, in order."""
    outcome: str = "created"
    """`created`; `unchanged` (same identity, same content: nothing to do); `resync` (a URI's content changed:
    this is the new version, replacing `replaces` once ready); `resync_pending` (that version is already
    registered)."""
    replaces: UUID | None = None
    """For a new version of a URI, the live source it replaces when it becomes ready."""


@dataclass(frozen=True, slots=True)
class PreparedChunks:
    """The chunk rows of one (source, model)."""

    source_id: UUID
    """The source."""
    model: str
    """The model the rows are pinned to."""
    chunk_count: int
    """How many chunk rows the model holds for the source."""
    embedded_count: int
    """How many of them already hold a vector."""
    origin: str
    """`extracted` (read the document), `copied` (from another model's rows) or `existing` (nothing to do)."""
    extract_s: float = 0.0
    """Seconds spent reading and extracting the document."""
    chunk_s: float = 0.0
    """Seconds spent chunking."""
    insert_s: float = 0.0
    """Seconds spent writing the rows."""


@dataclass(frozen=True, slots=True)
class EmbeddedBatch:
    """One batch of vectors stored."""

    source_id: UUID
    """The source."""
    model: str
    """The model embedded with."""
    embedded: int
    """Vectors stored by this call (0 when a concurrent run stored them first)."""
    remaining: int
    """Chunks of this model still without a vector."""
    embed_s: float = 0.0
    """Seconds spent embedding."""
    store_s: float = 0.0
    """Seconds spent storing."""


@dataclass(frozen=True, slots=True)
class ReadyCheck:
    """What marking a (source, model) ready found."""

    source_id: UUID
    """The source."""
    model: str
    """The model checked."""
    ready: bool
    """True when every chunk row exists and holds its vector (the row is now ready)."""
    source_ready: bool
    """True when this call also made the source itself ready."""
    chunk_count: int
    """Chunk rows of this model."""
    embedded_count: int
    """Of which hold a vector."""


@dataclass(frozen=True, slots=True)
class FailedMark:
    """What marking a source failed changed."""

    source_id: UUID
    """The source."""
    source_failed: bool
    """True when the source itself became failed (it was pending; a ready source keeps serving)."""
    models: tuple[str, ...]
    """The readiness rows that became failed."""


@dataclass(frozen=True, slots=True)
class SourceOutcome:
    """Where one source stands after a bulk run."""

    source_id: UUID
    """The source."""
    status: str
    """`ready` (made ready now), `unchanged` (was ready already), `failed`, or `pending` (left for a retry)."""
    reason: str | None = None
    """Why it failed."""
    chunks: int = 0
    """Chunks written for it."""


@dataclass
class BulkResult:
    """What a bulk run did, per source and per stage."""

    outcomes: list[SourceOutcome] = field(default_factory=list)
    """One per requested source that exists, in request order."""
    extract_s: float = 0.0
    """Seconds reading, extracting and chunking."""
    embed_s: float = 0.0
    """Seconds embedding."""
    write_s: float = 0.0
    """Seconds writing chunks and marking ready (overlaps the next wave's extraction)."""

    def count(self, status: str) -> int:
        """How many sources ended in `status`."""
        return sum(1 for o in self.outcomes if o.status == status)
