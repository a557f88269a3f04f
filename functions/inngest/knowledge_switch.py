"""`knowledge-model-switch` and `knowledge-reembed-source`: change the live embedding model of a scope safely.

`knowledge/model.switch.requested` with `{organization_id (null = the platform default), model}`:

1. `begin`: check that the model can embed (its key is present, one test call answers), register the model
   and its index, record the running switch (its id is what the later steps follow), list the sources to
   re-embed; a model that cannot embed fails the run before any switch opens;
2. `fan-out`: one `knowledge/source.reembed.requested` per source, each run by `knowledge-reembed-source`;
3. poll: `check <n>` counts the scope's readiness under the new model, then `wait <n>` sleeps. Sources
   that appear meanwhile are counted too and the flip waits for them: an upload during the switch is
   built under both models by its own `knowledge-ingest` run (`GET /v1/knowledge/switch` names what the
   flip waits for), an unreadable one fails on its own and leaves the scope; a source in scope without a
   readiness row triggers a `rescan` that re-embeds it;
4. `flip`: one row, one instant, only for this switch and only when every source in scope is ready under
   the new model;
5. `delete-old-chunks`: the old model's chunks nothing needs any more.

A switch cancelled meanwhile (`ac-context switch-model --cancel`, `DELETE /v1/knowledge/switch`) ends the
run at its next check (or at the flip) with `code: knowledge_switch_cancelled`, without reopening the switch
and without flipping; its re-embeds stop at their next batch, and the cancel deleted what they wrote.

A failed re-embed of a source that serves the old model stops the switch before the flip: the run fails
with the sources and their reasons, the old model stays live, and the switch stays open so that retrying
the failed source and sending the request again resumes it. This module must never flip by itself:
`knowledge.settings.flip_live_model` checks readiness in the statement that flips.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import inngest

from functions._services import ServiceSlot
from functions.events import EVENT_REEMBED, EVENT_SWITCH
from functions.inngest._steps import build_model_steps, source_id_of
from knowledge.db_errors import SwitchCancelledError
from knowledge.errors import KnowledgeError
from knowledge.ingest import mark_failed
from knowledge.settings import (
    begin_switch,
    drop_unwanted_chunks,
    flip_live_model,
    rescan_switch,
    running_switch,
    switch_state,
    switch_status,
)
from knowledge.switchover import switch_failures
from state.db import Database

__all__ = [
    "EVENT_REEMBED",
    "EVENT_SWITCH",
    "MAX_POLLS",
    "POLL_INTERVAL",
    "REEMBED_FUNCTION_ID",
    "REEMBED_RETRIES",
    "SWITCH_FUNCTION_ID",
    "SWITCH_RETRIES",
    "make_knowledge_reembed",
    "make_knowledge_switch",
]

SWITCH_FUNCTION_ID = "knowledge-model-switch"
REEMBED_FUNCTION_ID = "knowledge-reembed-source"
POLL_INTERVAL = timedelta(minutes=1)
MAX_POLLS = 240
"""Four hours of polling (480 steps, under Inngest's 1,000-step limit); then the run fails and can resume."""
SWITCH_RETRIES = 3
REEMBED_RETRIES = 4


def _scope(data: Any) -> tuple[UUID | None, str]:
    try:
        raw = data.get("organization_id")
        model = data["model"]
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty string")
        return (None if raw is None else UUID(str(raw))), model
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise inngest.NonRetriableError(f"invalid switch request: {exc}") from exc


def make_knowledge_switch(client: inngest.Inngest, slot: ServiceSlot) -> inngest.Function[Any]:
    """Create `knowledge-model-switch` over the services in `slot`."""

    @client.create_function(
        fn_id=SWITCH_FUNCTION_ID,
        name="Knowledge: switch the live embedding model",
        trigger=inngest.TriggerEvent(event=EVENT_SWITCH),
        concurrency=[inngest.Concurrency(key="event.data.organization_id", limit=1)],
        retries=SWITCH_RETRIES,
    )
    async def knowledge_model_switch(ctx: inngest.Context) -> dict[str, Any]:
        organization_id, model = _scope(ctx.event.data)
        scope = None if organization_id is None else str(organization_id)

        async def begin() -> dict[str, Any]:
            services = slot.get()
            try:
                embedder = services.embedders.get(model)
                plan = await begin_switch(services.db, organization_id, model, embedder=embedder)
            except KnowledgeError as exc:
                if exc.retryable:
                    raise
                raise inngest.NonRetriableError(f"{exc.code}: {exc.message}") from exc
            return {
                "from_model": plan.from_model,
                "already_live": plan.already_live,
                "switch_id": None if plan.switch_id is None else str(plan.switch_id),
                "sources": [str(s) for s in plan.source_ids],
            }

        async def fan_out(sources: list[str], step_id: str) -> int:
            if not sources:
                return 0
            events = [
                inngest.Event(name=EVENT_REEMBED, data={"source_id": s, "model": model, "organization_id": scope})
                for s in sources
            ]
            await ctx.step.send_event(step_id, events)
            return len(events)

        plan = await ctx.step.run("begin", begin)
        if plan["already_live"]:
            return {"model": model, "flipped": False, "reason": f"{model} is already the live model"}

        def ended(closed: str) -> dict[str, Any]:
            if closed == "flipped":
                return {"model": model, "flipped": True, "from_model": plan["from_model"], "reembeds": sent,
                        "reason": f"another run flipped the switch to {model}"}  # fmt: skip
            return {
                "model": model,
                "flipped": False,
                "code": SwitchCancelledError.code,
                "reason": f"the switch to {model} was cancelled: {plan['from_model']} stays live and the chunks "
                f"written under {model} were deleted",
                "reembeds": sent,
            }

        sent = await fan_out(plan["sources"], "fan-out")
        if plan.get("switch_id") is None:  # a run begun before `begin` named its switch
            plan["switch_id"] = await ctx.step.run("switch-id", lambda: _running_id(slot, organization_id, model))
        if plan["switch_id"] is None:
            return ended("cancelled")
        switch_id = UUID(plan["switch_id"])

        for n in range(MAX_POLLS):

            async def check() -> dict[str, Any]:
                db = slot.get().db
                closed = await _closed(db, switch_id)
                if closed is not None:
                    return {"closed": closed}
                status = await switch_status(db, organization_id, model)
                return {
                    "total": status.total,
                    "ready": status.ready,
                    "pending": status.pending,
                    "failed": status.failed,
                    "missing": status.missing,
                }

            counts = await ctx.step.run(f"check {n}", check)
            if counts.get("closed"):
                return ended(counts["closed"])
            if counts["failed"]:
                reasons = await ctx.step.run(
                    f"failures {n}", lambda: switch_failures(slot.get().db, organization_id, model)
                )
                raise inngest.NonRetriableError(
                    f"the switch to {model} stopped: {counts['failed']} of {counts['total']} source(s) failed to "
                    f"re-embed, so {plan['from_model']} stays live. Retry them and request the switch again. "
                    + "; ".join(reasons)
                )
            if counts["ready"] == counts["total"]:
                break
            if counts["missing"]:

                async def rescan() -> dict[str, Any]:
                    try:
                        again = await rescan_switch(slot.get().db, switch_id)
                    except SwitchCancelledError:
                        return {"closed": "cancelled", "sources": []}
                    return {"closed": "flipped" if again.already_live else None,
                            "sources": [str(s) for s in again.source_ids]}  # fmt: skip

                rescanned = await ctx.step.run(f"rescan {n}", rescan)
                if rescanned["closed"]:
                    return ended(rescanned["closed"])
                sent += await fan_out(rescanned["sources"], f"fan-out {n}")
            await ctx.step.sleep(f"wait {n}", POLL_INTERVAL)
        else:
            raise inngest.NonRetriableError(
                f"the switch to {model} did not finish in {MAX_POLLS} checks; {plan['from_model']} stays live. "
                "Request the switch again to resume it."
            )

        async def flip() -> dict[str, Any]:
            try:
                flipped = await flip_live_model(
                    slot.get().db, organization_id, model, drop_old=False, switch_id=switch_id
                )
            except SwitchCancelledError:
                return {"closed": "cancelled"}
            return {"from_model": flipped.from_model, "to_model": flipped.to_model}

        flipped = await ctx.step.run("flip", flip)
        if flipped.get("closed"):
            return ended(flipped["closed"])

        async def delete_old() -> int:
            return await drop_unwanted_chunks(slot.get().db, flipped["from_model"])

        dropped = await ctx.step.run("delete-old-chunks", delete_old)
        return {
            "model": model,
            "flipped": True,
            "from_model": flipped["from_model"],
            "reembeds": sent,
            "dropped": dropped,
        }

    return knowledge_model_switch


async def _closed(db: Database, switch_id: UUID) -> str | None:
    """None while the switch runs; else how it ended (`cancelled`, or `flipped` by another run)."""
    state = await switch_state(db, switch_id)
    return None if state == "running" else state


async def _running_id(slot: ServiceSlot, organization_id: UUID | None, model: str) -> str | None:
    switch = await running_switch(slot.get().db, organization_id)
    if switch is None or switch.to_model != model or switch.switch_id is None:
        return None
    return str(switch.switch_id)


def make_knowledge_reembed(client: inngest.Inngest, slot: ServiceSlot) -> inngest.Function[Any]:
    """Create `knowledge-reembed-source`: one source under one model, the steps of an ingestion."""

    async def on_failure(ctx: inngest.Context) -> dict[str, Any]:
        original = ctx.event.data.get("event") or {}
        data = original.get("data") if isinstance(original, dict) else None
        source_id = source_id_of(data)
        model = data.get("model") if isinstance(data, dict) else None
        error = ctx.event.data.get("error") or {}
        message = error.get("message", "unknown error") if isinstance(error, dict) else str(error)
        marked = await mark_failed(
            slot.get().db, source_id, f"re-embedding failed after its retries: {message}", model=model
        )
        return {"source_id": str(source_id), "models_failed": list(marked.models)}

    @client.create_function(
        fn_id=REEMBED_FUNCTION_ID,
        name="Knowledge: re-embed a source under a model",
        trigger=inngest.TriggerEvent(event=EVENT_REEMBED),
        concurrency=[
            inngest.Concurrency(key="event.data.source_id", limit=1),
            inngest.Concurrency(key="event.data.organization_id", limit=4),
        ],
        retries=REEMBED_RETRIES,
        on_failure=on_failure,
    )
    async def knowledge_reembed_source(ctx: inngest.Context) -> dict[str, Any]:
        source_id = source_id_of(ctx.event.data)
        model = ctx.event.data.get("model")
        if not isinstance(model, str) or not model:
            raise inngest.NonRetriableError("the event names no model")
        return await build_model_steps(ctx, slot, source_id, model)

    return knowledge_reembed_source
