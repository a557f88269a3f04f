"""A switchover's memory fill: the scope's live memories embedded under the new model, wired here.

`knowledge.switchover` runs the fill (before the flip, and once more after it) but may not import `memory`,
and `memory` may not import `knowledge`; this module, in the one room that may read both, hands the switch a
`VectorFill` over `memory.vectors.fill_vectors` for the organizations whose live model the switch changes
(`knowledge.embedding.live_model.switch_organizations`: the one, or every organization that follows the
platform default), embedding with the new model by name (`context.sources.memory_vectors.model_memory_embedder`).
It also counts them for the switch's progress (`memory_progress`, in `GET /v1/knowledge/switch` and
`ac-context switch-model --status`). This module must never flip, and never embed a memory that has a
vector under the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from context.sources.memory_vectors import model_memory_embedder
from knowledge.embedding.live_model import switch_organizations
from knowledge.embedding.registry import EmbedderLookup
from knowledge.switchover import VectorFill
from memory.vectors import fill_vectors, vector_coverage
from state.db import Database

__all__ = ["FILL_STEP", "memory_fill", "memory_progress"]

FILL_STEP = 2048
"""Memories one fill call (one durable step) embeds at most: eight batches of 256."""


def memory_fill(
    db: Database | Callable[[], Database],
    organization_id: UUID | None,
    embedders: EmbedderLookup,
    *,
    on_fill: Callable[[int], None] | None = None,
) -> VectorFill:
    """The fill of a switch of the scope: up to `FILL_STEP` memories without a vector under the model a call."""

    async def fill(model: str) -> int:
        conn = db if isinstance(db, Database) else db()
        organizations = await switch_organizations(conn, organization_id)
        if not organizations:
            return 0
        filled = await fill_vectors(conn, organizations, model, model_memory_embedder(model, embedders), most=FILL_STEP)
        if on_fill is not None and filled.embedded:
            on_fill(filled.embedded)
        return filled.embedded

    return fill


async def memory_progress(db: Database, organization_id: UUID | None, model: str) -> dict[str, Any]:
    """The scope's live memories and how many hold a vector under `model` (the fill's progress)."""
    coverage = await vector_coverage(db, await switch_organizations(db, organization_id), model)
    return {"live": coverage.live, "embedded": coverage.embedded, "pending": coverage.pending}
