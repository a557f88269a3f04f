"""A switchover run to its end in this process: re-embed the scope, flip one row, delete the old chunks.

`ac-context switch-model` runs it; the Inngest functions run the same steps durably (`knowledge-model-switch`
fans out `knowledge-reembed-source`). `run_switch` builds every source of the plan, then reads the scope
again and builds what appeared meanwhile (an upload during the switch is built under the old model and
the new one, so it serves at once and the flip can happen), until every source in scope is ready under
the new model; then it flips and deletes the old chunks. A source that cannot be read fails on its own
with its reason and leaves the scope; it never stops the switch. A source that is ready under the old
model but fails under the new one stops the switch before the flip (`SwitchNotReadyError` naming it): the
old model stays live and running the switch again resumes it. A cancel from anywhere (`switch-model
--cancel`, `DELETE /v1/knowledge/switch`) stops the run at its next batch with `SwitchCancelledError`;
the cancel itself deleted what the run wrote. This module must never flip by itself
(`knowledge.settings.flip_live_model` checks readiness in the statement that flips) and never build a
model the switch is not about.
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from knowledge._pipeline import ingest_source
from knowledge._switch_records import FlipResult, SwitchPlan
from knowledge.db_errors import SwitchNotReadyError
from knowledge.ingest import EmbedderLookup
from knowledge.objects import ObjectStore
from knowledge.settings import (
    drop_unwanted_chunks,
    ensure_running,
    flip_live_model,
    rescan_switch,
    switch_status,
    switch_waiting,
)
from state.db import Database

__all__ = ["MAX_ROUNDS", "SwitchProgress", "run_switch", "switch_failures"]

MAX_ROUNDS = 50
"""Passes over the scope before giving up on a scope that keeps growing faster than it is embedded."""

SwitchProgress = Callable[[int, int], None]
"""Called after each source with (sources done, sources known so far)."""


async def run_switch(
    db: Database,
    store: ObjectStore,
    plan: SwitchPlan,
    *,
    embedders: EmbedderLookup,
    on_progress: SwitchProgress | None = None,
    batch_size: int | None = None,
) -> FlipResult:
    """Re-embed the scope of a begun switch until every source is ready under the new model, then flip it."""
    if plan.switch_id is None:
        raise ValueError("the plan has no running switch (is the model already live?)")
    switch_id = plan.switch_id
    models = {plan.from_model, plan.to_model}
    todo = list(plan.source_ids)
    done, known = 0, len(todo)
    for _ in range(MAX_ROUNDS):
        for source_id in todo:
            await ensure_running(db, switch_id)
            # Both models: a pending upload needs the old one to serve now; a bad document fails itself.
            await ingest_source(db, store, source_id, embedders=embedders, batch_size=batch_size, models=models)
            done += 1
            if on_progress is not None:
                on_progress(done, known)
        await ensure_running(db, switch_id)
        status = await switch_status(db, plan.organization_id, plan.to_model)
        if status.failed:
            raise SwitchNotReadyError(await _stopped(db, plan, status.failed, status.total))
        if status.complete:
            try:
                flipped = await flip_live_model(
                    db, plan.organization_id, plan.to_model, drop_old=False, switch_id=switch_id
                )
            except SwitchNotReadyError:
                pass  # a source arrived between the count and the flip: one more pass
            else:
                dropped = await drop_unwanted_chunks(db, flipped.from_model)
                return FlipResult(flipped.organization_id, flipped.from_model, flipped.to_model, dropped)
        todo = list((await rescan_switch(db, switch_id)).source_ids)
        known += len(todo)
    status = await switch_status(db, plan.organization_id, plan.to_model)
    raise SwitchNotReadyError(
        f"{status.ready} of {status.total} sources are ready under {plan.to_model} after {MAX_ROUNDS} passes "
        f"({status.pending} pending): sources keep arriving faster than they are embedded. The switch stays "
        f"open and {plan.from_model} live; run it again to resume"
    )


async def switch_failures(db: Database, organization_id: UUID | None, model: str, *, limit: int = 5) -> list[str]:
    """Why re-embeds of a switch failed: `title (source id): reason` of the first failed sources in scope."""
    waiting = await switch_waiting(db, organization_id, model, limit=limit)
    return [f"{w.title} ({w.source_id}): {w.failure_reason}" for w in waiting if w.status == "failed"]


async def _stopped(db: Database, plan: SwitchPlan, failed: int, total: int) -> str:
    reasons = "; ".join(await switch_failures(db, plan.organization_id, plan.to_model))
    return (
        f"the switch to {plan.to_model} stopped: {failed} of {total} source(s) failed to re-embed, so "
        f"{plan.from_model} stays live and the switch stays open. Retry them and run the switch again: {reasons}"
    )
