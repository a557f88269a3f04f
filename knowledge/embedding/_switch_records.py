"""The small records of the live model and its switchover: ids, model ids and counts.

`knowledge.embedding.live_model` re-exports them. This module must never hold a query or a document's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

__all__ = ["FlipResult", "LiveModel", "RunningSwitch", "SwitchPlan", "SwitchStatus", "WaitingSource"]


@dataclass(frozen=True, slots=True)
class LiveModel:
    """The model every search of a scope embeds its query with and filters chunks to."""

    model_id: str
    """The model id, e.g. `local/wordllama-l2-supercat-256`."""
    dimensions: int
    """Its vector length."""
    platform_default: bool
    """True when the platform row answered (the organization has no row of its own)."""
    fusion_method: str = "convex"
    """The model's calibrated fusion method, `convex` or `rrf` (migrations/0103)."""
    dense_weight: float = 0.3
    """The model's calibrated weight of the dense list."""
    lexical_weight: float = 0.7
    """The model's calibrated weight of the lexical (BM25) list."""


@dataclass(frozen=True, slots=True)
class SwitchPlan:
    """A started (or resumed) switchover: the sources to re-embed under the new model."""

    organization_id: UUID | None
    """The scope: an organization, or None for the platform default."""
    from_model: str
    """The model live when the switch started."""
    to_model: str
    """The new model."""
    source_ids: tuple[UUID, ...]
    """The sources in scope not yet ready under the new model."""
    already_live: bool = False
    """True when the new model is already live for the scope (nothing to do)."""
    switch_id: UUID | None = None
    """The switch row (None when `already_live`): a cancel closes it, and whoever runs it stops."""


@dataclass(frozen=True, slots=True)
class SwitchStatus:
    """How far a switchover is: the sources in scope and their readiness under the new model."""

    organization_id: UUID | None
    """The scope."""
    model: str
    """The new model."""
    total: int
    """Sources in scope (failed sources are outside every scope)."""
    ready: int
    """Ready under the new model."""
    pending: int
    """Still being embedded (a source uploaded during the switch is embedded under both models)."""
    failed: int
    """Failed under the new model: retry them, or the switch never flips."""
    missing: int
    """In scope with no readiness row yet (run `begin_switch` again to add them)."""

    @property
    def complete(self) -> bool:
        """Every source in scope is ready under the new model."""
        return self.ready == self.total

    @property
    def phase(self) -> str:
        """`stopped` (a source failed under the new model), `embedding` (the flip waits) or `ready_to_flip`."""
        if self.failed:
            return "stopped"
        return "ready_to_flip" if self.complete else "embedding"


@dataclass(frozen=True, slots=True)
class WaitingSource:
    """A source in a switch's scope that is not ready under the new model: what the flip waits for."""

    source_id: UUID
    """The source."""
    title: str
    """Its title."""
    source_status: str
    """The source's own status: `pending` (uploaded, not yet ingested) or `ready` (serving the old model)."""
    status: str
    """Its readiness under the new model: `pending`, `failed`, or `missing` (no row yet)."""
    failure_reason: str | None
    """Why it failed under the new model."""
    pending_since: datetime | None
    """Since when it has been pending."""


@dataclass(frozen=True, slots=True)
class RunningSwitch:
    """The open switchover of a scope."""

    organization_id: UUID | None
    """The scope: an organization, or None for the platform default."""
    from_model: str
    """The model live when it started (still live)."""
    to_model: str
    """The model it switches to."""
    started_at: datetime
    """When it opened."""
    switch_id: UUID | None = None
    """The switch row."""


@dataclass(frozen=True, slots=True)
class FlipResult:
    """A flipped live model."""

    organization_id: UUID | None
    """The scope."""
    from_model: str
    """The model live before."""
    to_model: str
    """The model live now."""
    dropped_chunks: int
    """Old chunks deleted after the flip."""
