"""One view of a scope's switchover, shared by `ac-context switch-model --status` and `GET /v1/knowledge/switch`.

It says what the flip waits for: the counts under the new model, a `phase` (`embedding`: sources are
still pending, among them uploads made during the switch, which their ingestion builds under both models;
`stopped`: a source failed under the new model, retry it and request the switch again; `ready_to_flip`),
the first sources not ready with their status, reason and pending age, and `memories`: the scope's live
memories and how many hold a vector under the new model (the switch fills them before its flip). This
module must never change a switch.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from functions._memory_switch import memory_progress
from knowledge.embedding.live_model import live_model, running_switch, switch_status, switch_waiting
from state.db import Database

__all__ = ["WAITING_LIMIT", "switch_view"]

WAITING_LIMIT = 5
"""Sources named in `waiting_for` (the counts say how many there are in all)."""


def _age_s(since: datetime | None) -> float | None:
    return None if since is None else round((datetime.now(UTC) - since).total_seconds(), 1)


async def switch_view(db: Database, scope: UUID | None) -> dict[str, Any]:
    """The running switchover of a scope and what its flip waits for, or `running: false` and the live model."""
    live = await live_model(db, scope)
    switch = await running_switch(db, scope)
    out: dict[str, Any] = {
        "organization_id": None if scope is None else str(scope),
        "live_model": live.model_id,
        "running": switch is not None,
    }
    if switch is None:
        return out
    status = await switch_status(db, scope, switch.to_model)
    waiting = await switch_waiting(db, scope, switch.to_model, limit=WAITING_LIMIT)
    return out | {
        "from_model": switch.from_model,
        "to_model": switch.to_model,
        "started_at": switch.started_at.isoformat(),
        "phase": status.phase,
        "total": status.total,
        "ready": status.ready,
        "pending": status.pending,
        "failed": status.failed,
        "missing": status.missing,
        "memories": await memory_progress(db, scope, switch.to_model),
        "waiting_for": [
            {
                "source_id": str(w.source_id),
                "title": w.title,
                "source_status": w.source_status,
                "status": w.status,
                "failure_reason": w.failure_reason,
                "pending_age_s": _age_s(w.pending_since) if w.status == "pending" else None,
            }
            for w in waiting
        ],
    }
