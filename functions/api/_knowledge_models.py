"""The answers of `/v1/knowledge/…`, as OpenAPI reads them: one pydantic model per shape a route returns.

Each model holds exactly the keys its route answers (`extra="forbid"`, no defaults), so a route whose body
grows or loses a key fails its tests rather than drifting from its documentation. The routes build their
JSON as before; these models only validate and describe it. This module must never compute a value.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

__all__ = [
    "AttemptOut",
    "AttemptsOut",
    "BatchRegisteredOut",
    "ModelReadinessOut",
    "RegisteredOut",
    "RetryOut",
    "SearchHitOut",
    "SearchOut",
    "SourceDetailOut",
    "SourceListItemOut",
    "SourceRegisteredOut",
    "SwitchCancelOut",
    "SwitchMemoriesOut",
    "SwitchOut",
    "SwitchWaitingOut",
]

_OUT = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class RegisteredOut(BaseModel):
    """One document of a batch, as registered."""

    model_config = _OUT

    source_id: UUID
    """The source the document is (or already was)."""
    created: bool
    """True when this request registered it; false for a document the scope already had."""
    status: str
    """The source's status now: `pending` until its ingestion makes it `ready` (or `failed`)."""
    outcome: str
    """`created`, `unchanged` (the same document again), `resync` (a new version of a known URI) or
    `resync_pending` (that new version was registered already)."""
    replaces: UUID | None
    """For `resync`: the live version this one replaces once it is ready; else null."""


class SourceRegisteredOut(RegisteredOut):
    """A registered upload or synced URI, and the ingestion event sent for it."""

    event_id: str | None
    """The id of the ingestion event of a pending source (its outbox row); null when none was needed."""
    event_status: str | None = None
    """`sent` (Inngest took it) or `queued` (it waits in the outbox, the service sends it); null: no event."""
    event_error: str | None = None
    """Why the event could not be sent yet, when it is `queued`."""


class BatchRegisteredOut(BaseModel):
    """A registered batch: every document's source, and the ingestion events sent for the pending ones."""

    model_config = _OUT

    sources: list[RegisteredOut]
    """One entry per document of the request, in order."""
    event_ids: list[str]
    """The ids of the batch events, one per slice of at most `MAX_BATCH_SOURCES` pending sources."""
    event_status: str | None = None
    """`sent` or `queued` (waiting in the outbox, the service sends them); null when no event was needed."""
    event_error: str | None = None
    """Why the events could not be sent yet, when they are `queued`."""


class _SourceIdentityOut(BaseModel):
    """What every interface shows of a source: identity, status, why, attempts, owner, review date."""

    model_config = _OUT

    id: UUID
    """The source's id."""
    organization_id: UUID | None
    """Its organization; null for a platform document."""
    kind: str
    """`upload` or `uri`."""
    title: str
    """Its title."""
    uri: str | None
    """The URI of a synced source; null for an upload."""
    status: str
    """`pending`, `ready` or `failed`."""
    failure_reason: str | None
    """Why it failed, with its code; null unless `failed`."""
    attempts: int
    """How many ingestion attempts it has had."""
    owner: str | None
    """Who answers for the document, or null."""
    review_by: str | None
    """When it must be reviewed (`YYYY-MM-DD`), or null."""
    overdue: bool
    """True when the review date is before today (UTC)."""
    updated_at: str
    """When the source last changed (ISO 8601)."""


class SourceListItemOut(_SourceIdentityOut):
    """One source of a list."""

    pending_since: str | None
    """When it became pending (ISO 8601); null unless pending."""
    created_at: str
    """When it was registered (ISO 8601): the list is newest first."""
    embedding_model: str | None
    """The model it is shown under: its scope's live model when it is wanted under it; null before any."""
    chunk_count: int | None
    """Its chunks under that model; null until they are written."""
    embedded_count: int
    """How many of them are embedded."""


class ModelReadinessOut(BaseModel):
    """A source under one embedding model."""

    model_config = _OUT

    model: str
    """The embedding model."""
    status: str
    """`pending`, `ready` or `failed` under this model."""
    chunks: int | None
    """Its chunks under this model; null until they are written."""
    embedded: int
    """How many of them are embedded."""
    failure_reason: str | None
    """Why it failed under this model, or null."""
    pending_age_s: float | None
    """Seconds since it became pending under this model; null unless pending."""


class SourceDetailOut(_SourceIdentityOut):
    """One source with its readiness per embedding model."""

    pending_age_s: float | None
    """Seconds since it became pending; null unless pending."""
    models: list[ModelReadinessOut]
    """Its readiness under each model that has built it."""


class RetryOut(BaseModel):
    """A retried source."""

    model_config = _OUT

    source_id: UUID
    """The source."""
    reset: Literal[True]
    """Always true: only a failed source is retried (any other answers 409 `source_not_failed`)."""
    status: Literal["pending"]
    """Its status now: `pending`, until its ingestion runs (its attempts say how that went)."""
    event_id: str | None
    """The id of the retry event (its outbox row), or null."""
    event_status: str | None = None
    """`sent`, `queued` (it waits in the outbox; the service sends it when Inngest answers) or `in_process`."""
    event_error: str | None = None
    """Why the send failed, when it was queued."""


class AttemptOut(BaseModel):
    """One ingestion attempt of a source."""

    model_config = _OUT

    id: int
    """Its order among every attempt (larger: later)."""
    embedding_model: str | None
    """Null: the whole source; a model: a ready source built under one more model (a model switch)."""
    cause: Literal["upload", "batch", "resync", "retry", "model_switch"]
    """What started it."""
    started_at: str
    """When it started (ISO 8601): the source, or its model row, became pending."""
    finished_at: str | None
    """When it finished (ISO 8601); null while it runs."""
    outcome: Literal["ready", "failed"] | None
    """How it ended; null while it runs."""
    ended_by: Literal["ingestion", "sweep"] | None
    """What ended it: the ingestion, or the hourly sweep that failed it stuck; null while it runs."""
    reason: str | None
    """Why it failed; null unless failed."""


class AttemptsOut(BaseModel):
    """A source's latest ingestion attempts, newest first (at most 100 are kept)."""

    model_config = _OUT

    source_id: UUID
    """The source."""
    attempts: list[AttemptOut]
    """Its attempts, newest first."""


class SearchHitOut(BaseModel):
    """One chunk that answers the query."""

    model_config = _OUT

    chunk_id: int
    """The chunk's id."""
    source_id: UUID
    """The source it is part of."""
    source_title: str
    """That source's title."""
    platform: bool
    """True for a platform document."""
    ordinal: int
    """Its position in the source, from 0."""
    text: str
    """The chunk's text."""
    score: float
    """Its fused relevance: the hits placed by `rank` come first, best first, then those that `cap_fill`."""
    placed: Literal["rank", "cap_fill"]
    """`rank`: by its score, within its document's cap (`per_source`); `cap_fill`: past that cap, in room the
    limit had left after every other document's candidates."""
    embedding_model: str
    """The model the query and the chunk were embedded with (the live one)."""


class SearchOut(BaseModel):
    """The best chunks for a query."""

    model_config = _OUT

    hits: list[SearchHitOut]
    """At most `limit` hits, best first."""


class SwitchWaitingOut(BaseModel):
    """A source the flip of a switchover waits for."""

    model_config = _OUT

    source_id: UUID
    """The source."""
    title: str
    """Its title."""
    source_status: str
    """Its status under the live model."""
    status: str
    """Its status under the new model."""
    failure_reason: str | None
    """Why it failed under the new model, or null."""
    pending_age_s: float | None
    """Seconds since it became pending under the new model; null unless pending."""


class SwitchMemoriesOut(BaseModel):
    """The scope's live memories and their vectors under the new model (the switch fills them before its flip)."""

    model_config = _OUT

    live: int
    """Live memories of the organizations whose live model the switch changes."""
    embedded: int
    """Of them, those holding a vector under the new model."""
    pending: int
    """Of them, those still without one."""


class SwitchOut(BaseModel):
    """The running switchover of a scope; with `running: false`, only the first three fields are answered."""

    model_config = _OUT

    organization_id: UUID | None
    """The scope's organization; null for the platform default."""
    live_model: str
    """The model searches use now."""
    running: bool
    """Whether a switchover runs."""
    from_model: str | None = None
    """The model being replaced (only while running)."""
    to_model: str | None = None
    """The model being built (only while running)."""
    started_at: str | None = None
    """When the switchover started, ISO 8601 (only while running)."""
    phase: str | None = None
    """`embedding`, `stopped` (a source failed under the new model) or `ready_to_flip` (only while running)."""
    total: int | None = None
    """Sources the new model must hold (only while running)."""
    ready: int | None = None
    """Of them, ready under the new model."""
    pending: int | None = None
    """Of them, pending under the new model."""
    failed: int | None = None
    """Of them, failed under the new model."""
    missing: int | None = None
    """Of them, not yet started under the new model."""
    memories: SwitchMemoriesOut | None = None
    """The scope's live memories and how many hold a vector under the new model (only while running)."""
    waiting_for: list[SwitchWaitingOut] | None = None
    """The first sources not ready under the new model (only while running)."""


class SwitchCancelOut(BaseModel):
    """A cancelled switchover, or `cancelled: false` when none ran."""

    model_config = _OUT

    organization_id: UUID | None
    """The scope's organization; null for the platform default."""
    cancelled: bool
    """Whether a running switchover was cancelled."""
    to_model: str | None
    """The model it was building, or null."""
    dropped_chunks: int
    """The new model's chunks deleted."""
    live_model: str
    """The model that stays live."""
