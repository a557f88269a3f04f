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
4. `embed-memories <n>.<k>`: the live memories of the scope's organizations that hold no vector under the
   new model, up to 2,048 a step (`functions._memory_switch`), so the relevance read has them at the flip;
5. `flip`: one row, one instant, only for this switch and only when every source in scope is ready under
   the new model;
6. `embed-memories-after-flip <k>`: the memories remembered under the old model between 4 and 5;
7. `delete-old-chunks`: the old model's chunks nothing needs any more.

A switch cancelled meanwhile (`ac-context switch-model --cancel`, `DELETE /v1/knowledge/switch`) ends the
run at its next check (or at the flip) with `code: knowledge_switch_cancelled`, without reopening the switch
and without flipping; its re-embeds stop at their next batch, and the cancel deleted what they wrote.

A failed re-embed of a source that serves the old model stops the switch before the flip: the run fails
with the sources and their reasons, the old model stays live, and the switch stays open so that retrying
the failed source and sending the request again resumes it. The sequence is `knowledge.switchover.switch_over`,
the one the CLI runs inline; this module gives it durable steps, a fan-out of events as its way to build
and a durable sleep as its way to wait, and turns its outcome into the run's output. It must never flip by
itself: `knowledge.embedding.live_model.flip_live_model` checks readiness in the statement that flips.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

import inngest

from functions._memory_switch import memory_fill
from functions._services import ServiceSlot
from functions.event_routes import event_triggers
from functions.events import EVENT_REEMBED, EVENT_SWITCH
from functions.inngest._steps import InngestRunner, RunFailedError, drive, source_id_of
from knowledge.embedding.live_model import SwitchPlan, begin_switch
from knowledge.errors import SwitchCancelledError
from knowledge.ingestion.core import build_model_steps
from knowledge.ingestion.failures import after_retries
from knowledge.ingestion.steps import mark_failed
from knowledge.switchover import SwitchOutcome, switch_over

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
        trigger=[inngest.TriggerEvent(event=e) for e in event_triggers(SWITCH_FUNCTION_ID)],
        concurrency=[inngest.Concurrency(key="event.data.organization_id", limit=1)],
        retries=SWITCH_RETRIES,
    )
    async def knowledge_model_switch(ctx: inngest.Context) -> dict[str, Any]:
        organization_id, model = _scope(ctx.event.data)

        async def begin() -> SwitchPlan:
            services = slot.get()
            return await begin_switch(services.db, organization_id, model, embedder=services.embedders.get(model))

        driver = _Driver(ctx, organization_id, model)
        fill = memory_fill(lambda: slot.get().db, organization_id, lambda m: slot.get().embedders.get(m))
        outcome = await switch_over(
            lambda: slot.get().db, organization_id, model, driver=driver, begin=begin, fill=fill
        )
        return _answer(outcome)

    return knowledge_model_switch


class _Driver(InngestRunner):
    """The switch's durable steps: a build sends one re-embed event per source, a wait sleeps `POLL_INTERVAL`."""

    in_place = False
    max_polls = MAX_POLLS

    def __init__(self, ctx: inngest.Context, organization_id: UUID | None, model: str) -> None:
        super().__init__(ctx)
        self.scope = None if organization_id is None else str(organization_id)
        self.model = model

    async def build(self, name: str, source_ids: Sequence[str]) -> int:
        if not source_ids:
            return 0
        data = [{"source_id": s, "model": self.model, "organization_id": self.scope} for s in source_ids]
        await self.ctx.step.send_event(name, [inngest.Event(name=EVENT_REEMBED, data=d) for d in data])
        return len(data)

    async def wait(self, name: str) -> None:
        await self.ctx.step.sleep(name, POLL_INTERVAL)


def _answer(outcome: SwitchOutcome) -> dict[str, Any]:
    """The run's output for each way the core's switch ended; a stop or a timeout fails the run for good."""
    model, from_model = outcome.model, outcome.from_model
    if outcome.state == "already_live":
        return {"model": model, "flipped": False, "reason": f"{model} is already the live model"}
    if outcome.state == "flipped":
        return {"model": model, "flipped": True, "from_model": from_model, "reembeds": outcome.reembeds,
                "dropped": outcome.dropped, "memories_embedded": outcome.memories}  # fmt: skip
    if outcome.state == "flipped_elsewhere":
        return {"model": model, "flipped": True, "from_model": from_model, "reembeds": outcome.reembeds,
                "reason": f"another run flipped the switch to {model}"}  # fmt: skip
    if outcome.state == "cancelled":
        return {
            "model": model,
            "flipped": False,
            "code": SwitchCancelledError.code,
            "reason": f"the switch to {model} was cancelled: {from_model} stays live and the chunks "
            f"written under {model} were deleted",
            "reembeds": outcome.reembeds,
        }
    if outcome.state == "stopped":  # the reasons are the vocabulary's (knowledge.reasons); no stack goes along
        raise RunFailedError(
            f"the switch to {model} stopped: {outcome.failed} of {outcome.total} source(s) failed to "
            f"re-embed, so {from_model} stays live. Retry them and request the switch again. "
            + "; ".join(outcome.reasons)
        )
    raise RunFailedError(
        f"the switch to {model} did not finish in {MAX_POLLS} checks; {from_model} stays live. "
        "Request the switch again to resume it."
    )


def make_knowledge_reembed(client: inngest.Inngest, slot: ServiceSlot) -> inngest.Function[Any]:
    """Create `knowledge-reembed-source`: one source under one model, the steps of an ingestion."""

    async def on_failure(ctx: inngest.Context) -> dict[str, Any]:
        original = ctx.event.data.get("event") or {}
        data = original.get("data") if isinstance(original, dict) else None
        source_id = source_id_of(data)
        model = data.get("model") if isinstance(data, dict) else None
        reason = after_retries(ctx.event.data.get("error"))  # a code of ours at most, never the engine's text
        marked = await mark_failed(slot.get().db, source_id, reason, model=model)
        return {"source_id": str(source_id), "models_failed": list(marked.models)}

    @client.create_function(
        fn_id=REEMBED_FUNCTION_ID,
        name="Knowledge: re-embed a source under a model",
        trigger=[inngest.TriggerEvent(event=e) for e in event_triggers(REEMBED_FUNCTION_ID)],
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
        steps = build_model_steps(source_id, model, one_step=False, durable=True)
        return await drive(ctx, steps, slot, subject=source_id)

    return knowledge_reembed_source
