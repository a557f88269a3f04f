"""The switchover, sequenced once: begin, build the scope, poll it, rescan it, flip one row, drop the old chunks.

    begin -> fan-out (build the plan's sources) -> per poll <n>: check <n> -> (failures <n> |
    embed-memories <n>.<k>... -> flip -> embed-memories-after-flip <k>... -> delete-old-chunks |
    rescan <n> -> fan-out <n>) -> wait <n>

`switch_over` is that sequence, run through a `SwitchDriver`: a step runner that also knows how to build
sources and how to wait. `run_switch` (what `ac-context switch-model` runs) drives it inline: each source
is built right here through the ingestion core under the old model and the new one (a pending upload
needs the old one to serve now), waiting costs nothing, and the scope is rescanned after every pass
until every source in it is ready under the new model. The Inngest `knowledge-model-switch` drives it
durably: its build sends one `knowledge/source.reembed.requested` per source, its wait is a durable
sleep, and it rescans only for sources that have no readiness row yet (an upload's own run builds it).

What else the scope embeds (its organizations' memories) is a `VectorFill` the caller hands in, since
`knowledge` imports no other room: once every source is ready, the fill embeds, in bounded steps, every
live memory that has no vector under the new model, then the flip, then one more fill for the memories
remembered under the old model between the fill and the flip. The relevance read therefore finds the new
model's vectors at the flip and never falls back to BM25 for the switch. A fill never embeds a memory twice
(it reads only those without a vector), so a rerun or a retried step continues where the last one stopped.

A source that cannot be read fails on its own with its reason and leaves the scope; it never stops the
switch. A source ready under the old model that failed under the new one stops the switch before the
flip (`stopped`, with the failures): the old model stays live and running the switch again resumes it. A
cancel from anywhere (`switch-model --cancel`, `DELETE /v1/knowledge/switch`) ends the run at its next
check (inline, at its next source or batch) as `cancelled`; `run_switch` raises `SwitchCancelledError`;
the cancel itself deleted what the run wrote. This module must never flip by itself
(`knowledge.embedding.live_model.flip_live_model` checks readiness in the statement that flips) and never build a
model the switch is not about.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from uuid import UUID

from knowledge.documents.objects import ObjectStore
from knowledge.embedding.embedder import Embedder, EmbedderLookup
from knowledge.embedding.live_model import (
    FlipResult,
    SwitchPlan,
    drop_unwanted_chunks,
    ensure_running,
    flip_live_model,
    rescan_switch,
    running_switch,
    switch_state,
    switch_status,
    switch_waiting,
)
from knowledge.errors import SwitchCancelledError, SwitchNotReadyError
from knowledge.ingestion.core import Ingestion, build_source_model, ingest_source
from knowledge.ingestion.steps import ReadyCheck
from state.db import Database

__all__ = [
    "MAX_FILL_STEPS",
    "MAX_ROUNDS",
    "SwitchDriver",
    "SwitchOutcome",
    "SwitchProgress",
    "VectorFill",
    "reembed_source",
    "run_switch",
    "switch_failures",
    "switch_over",
]


async def reembed_source(
    db: Database, store: ObjectStore, source_id: UUID, embedder: Embedder, *, batch_size: int | None = None
) -> ReadyCheck:
    """Chunk (copying another model's chunk texts when complete), embed and mark one source under a model."""
    return await build_source_model(db, store, source_id, embedder, batch_size=batch_size)


MAX_ROUNDS = 50
"""Passes over the scope (inline) before giving up on a scope that keeps growing faster than it is embedded."""

SwitchProgress = Callable[[int, int], None]
"""Called after each source with (sources done, sources known so far)."""

VectorFill = Callable[[str], Awaitable[int]]
"""Embeds one bounded batch of what else the scope serves (its organizations' live memories) under the model
it is given, only rows with no vector under it; answers how many it embedded (0: none is left)."""

MAX_FILL_STEPS = 200
"""Fill steps before the flip (and again after it); at `functions`' 2,048 memories a step, 409,600 memories."""

Step = dict[str, Any]
T = TypeVar("T")


class SwitchDriver(Protocol):
    """How a switch runs its steps, builds sources and waits between polls."""

    durable: bool
    """True when the driver retries a step that raised a retryable error (a durable engine)."""

    async def run(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        """Run the step `name` (or answer its memoized result) and return what `fn` returned."""
        ...

    in_place: bool
    """True when `build` builds each source itself: the scope is rescanned whenever it is not complete."""
    max_polls: int
    """Polls before the run gives up (the switch stays open; running it again resumes it)."""

    async def build(self, name: str, source_ids: Sequence[str]) -> int:
        """Build (or start building) the sources under the new model; returns how many were handed on."""
        ...

    async def wait(self, name: str) -> None:
        """Wait before the next poll."""
        ...


@dataclass(frozen=True, slots=True)
class SwitchOutcome:
    """How a switch run ended."""

    model: str
    """The new model."""
    state: str
    """`flipped`, `already_live`, `cancelled`, `flipped_elsewhere` (another run flipped it), `stopped` (a source
    failed under the new model) or `timed_out` (`max_polls` ran out)."""
    from_model: str | None = None
    """The model live when the switch began."""
    switch_id: UUID | None = None
    """The switch row."""
    reembeds: int = 0
    """Sources handed to `build`."""
    dropped: int = 0
    """Old chunks deleted after the flip."""
    failed: int = 0
    """Sources failed under the new model (`stopped`)."""
    total: int = 0
    """Sources in scope at the last check."""
    reasons: tuple[str, ...] = ()
    """`title (source id): reason` of the first failed sources (`stopped`)."""
    memories: int = 0
    """Memories the fill embedded under the new model, before the flip and after it."""


async def switch_over(
    db: Database | Callable[[], Database],
    organization_id: UUID | None,
    model: str,
    *,
    driver: SwitchDriver,
    begin: Callable[[], Awaitable[SwitchPlan]],
    fill: VectorFill | None = None,
) -> SwitchOutcome:
    """Run the switch of a scope to `model` through `driver` until it flips, stops, is cancelled or times out.

    `fill` embeds the scope's memories under `model`: before the flip, and once more after it.
    """

    def conn() -> Database:
        return db if isinstance(db, Database) else db()

    async def begin_step() -> Step:
        plan = await begin()
        return {
            "from_model": plan.from_model,
            "already_live": plan.already_live,
            "switch_id": None if plan.switch_id is None else str(plan.switch_id),
            "sources": [str(s) for s in plan.source_ids],
        }

    plan = dict(await driver.run("begin", begin_step))
    if plan["already_live"]:
        return SwitchOutcome(model, "already_live")
    sent = await driver.build("fan-out", plan["sources"])

    def ended(closed: str, switch_id: UUID | None) -> SwitchOutcome:
        state = "flipped_elsewhere" if closed == "flipped" else "cancelled"
        return SwitchOutcome(model, state, plan["from_model"], switch_id, sent)

    if plan.get("switch_id") is None:  # a run begun before `begin` named its switch
        plan["switch_id"] = await driver.run("switch-id", lambda: _running_id(conn(), organization_id, model))
    if plan["switch_id"] is None:
        return ended("cancelled", None)
    switch_id = UUID(plan["switch_id"])

    async def check() -> Step:
        state = await switch_state(conn(), switch_id)
        if state != "running":
            return {"closed": state}
        status = await switch_status(conn(), organization_id, model)
        return {"total": status.total, "ready": status.ready, "pending": status.pending, "failed": status.failed,
                "missing": status.missing}  # fmt: skip

    async def flip() -> Step:
        try:
            flipped = await flip_live_model(conn(), organization_id, model, drop_old=False, switch_id=switch_id)
        except SwitchCancelledError:
            return {"closed": "cancelled"}
        except SwitchNotReadyError:
            if driver.durable:  # the durable step is retried
                raise
            return {"not_ready": True}  # a source arrived between the count and the flip: one more pass
        return {"from_model": flipped.from_model, "to_model": flipped.to_model}

    async def rescan() -> Step:
        try:
            again = await rescan_switch(conn(), switch_id)
        except SwitchCancelledError:
            return {"closed": "cancelled", "sources": []}
        return {"closed": "flipped" if again.already_live else None, "sources": [str(s) for s in again.source_ids]}

    async def fill_before_flip() -> int:
        assert fill is not None
        if await switch_state(conn(), switch_id) != "running":
            return 0  # cancelled or flipped elsewhere: the flip step says which
        return await fill(model)

    async def fill_after_flip() -> int:
        assert fill is not None
        return await fill(model)

    async def fill_all(step: Callable[[], Awaitable[int]], name: Callable[[int], str]) -> int:
        embedded = 0
        for k in range(MAX_FILL_STEPS if fill is not None else 0):
            got: int = await driver.run(name(k), step)
            embedded += got
            if not got:
                break
        return embedded

    counts: Step = {}
    memories = 0
    for n in range(driver.max_polls):
        counts = await driver.run(f"check {n}", check)
        if counts.get("closed"):
            return ended(counts["closed"], switch_id)
        if counts["failed"]:
            reasons = await driver.run(f"failures {n}", lambda: switch_failures(conn(), organization_id, model))
            return SwitchOutcome(model, "stopped", plan["from_model"], switch_id, sent, failed=counts["failed"],
                                 total=counts["total"], reasons=tuple(reasons))  # fmt: skip
        if counts["ready"] == counts["total"]:
            # The memories before the flip, so the relevance read has the new model's vectors at the flip.
            memories += await fill_all(fill_before_flip, lambda k: f"embed-memories {n}.{k}")  # noqa: B023
            flipped = await driver.run("flip", flip)
            if flipped.get("closed"):
                return ended(flipped["closed"], switch_id)
            if not flipped.get("not_ready"):
                old: str = flipped["from_model"]
                # Those remembered under the old model between the fill and the flip.
                memories += await fill_all(fill_after_flip, lambda k: f"embed-memories-after-flip {k}")
                dropped = await driver.run("delete-old-chunks", lambda: drop_unwanted_chunks(conn(), old))  # noqa: B023
                return SwitchOutcome(model, "flipped", old, switch_id, sent, dropped, total=counts["total"],
                                     memories=memories)  # fmt: skip
        elif counts["missing"] or driver.in_place:
            rescanned = await driver.run(f"rescan {n}", rescan)
            if rescanned["closed"]:
                return ended(rescanned["closed"], switch_id)
            sent += await driver.build(f"fan-out {n}", rescanned["sources"])
        await driver.wait(f"wait {n}")
    return SwitchOutcome(model, "timed_out", plan["from_model"], switch_id, sent, total=counts.get("total", 0))


async def _running_id(db: Database, organization_id: UUID | None, model: str) -> str | None:
    switch = await running_switch(db, organization_id)
    if switch is None or switch.to_model != model or switch.switch_id is None:
        return None
    return str(switch.switch_id)


class _InlineDriver:
    """Builds each source here through the ingestion core; never waits; stops at the next source on a cancel."""

    durable = False
    in_place = True
    max_polls = MAX_ROUNDS

    def __init__(self, kit: Ingestion, plan: SwitchPlan, on_progress: SwitchProgress | None) -> None:
        self.kit, self.plan, self.on_progress = kit, plan, on_progress
        self.done = self.known = 0

    async def run(self, name: str, fn: Callable[[], Awaitable[Any]]) -> Any:
        return await fn()

    async def build(self, name: str, source_ids: Sequence[str]) -> int:
        assert self.plan.switch_id is not None
        self.known += len(source_ids)
        models = {self.plan.from_model, self.plan.to_model}
        for source_id in source_ids:
            await ensure_running(self.kit.db, self.plan.switch_id)
            # Both models: a pending upload needs the old one to serve now; a bad document fails itself.
            await ingest_source(self.kit, UUID(source_id), models=models)
            self.done += 1
            if self.on_progress is not None:
                self.on_progress(self.done, self.known)
        return len(source_ids)

    async def wait(self, name: str) -> None:
        return None


async def run_switch(
    db: Database,
    store: ObjectStore,
    plan: SwitchPlan,
    *,
    embedders: EmbedderLookup,
    on_progress: SwitchProgress | None = None,
    batch_size: int | None = None,
    fill: VectorFill | None = None,
) -> FlipResult:
    """Re-embed the scope of a begun switch here until every source is ready under the new model, then flip it.

    `fill` embeds the scope's memories under the new model before the flip, and those written meanwhile after it.
    """
    if plan.switch_id is None:
        raise ValueError("the plan has no running switch (is the model already live?)")
    switch_id = plan.switch_id
    driver = _InlineDriver(Ingestion(db, store, embedders, batch_size=batch_size), plan, on_progress)

    async def begun() -> SwitchPlan:
        return plan

    outcome = await switch_over(db, plan.organization_id, plan.to_model, driver=driver, begin=begun, fill=fill)
    if outcome.state == "flipped":
        return FlipResult(plan.organization_id, outcome.from_model or plan.from_model, plan.to_model, outcome.dropped,
                          outcome.memories)  # fmt: skip
    if outcome.state in ("cancelled", "flipped_elsewhere"):
        await ensure_running(db, switch_id)  # raises the cancel's own `SwitchCancelledError`
        raise SwitchCancelledError(f"the switch to {plan.to_model} was cancelled while it ran")
    if outcome.state == "stopped":
        raise SwitchNotReadyError(
            f"the switch to {plan.to_model} stopped: {outcome.failed} of {outcome.total} source(s) failed to "
            f"re-embed, so {plan.from_model} stays live and the switch stays open. Retry them and run the switch "
            f"again: {'; '.join(outcome.reasons)}"
        )
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
