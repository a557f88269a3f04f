"""What a bulk ingestion run reports: per source, per stage, and its progress calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from uuid import UUID

__all__ = ["BulkResult", "Progress", "SourceOutcome"]

Progress = Callable[[int, int], None]
"""Called after each written wave with (documents finished so far, chunks written so far)."""


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
