"""The Inngest side of the ingestion core: a driver that runs its sequences as durable steps.

`knowledge.ingestion` holds the sequences (their step names, what each step does, which errors fail a
document) as generators of steps; `drive` runs each yielded step as `ctx.step.run`, so each is memoized
and retried on its own, and the step's code is entered from here, never through a callback the core
holds. A step reads the services of the process that runs it; a `SourceFailedError` (the core marked
the source, or its model, failed) becomes `NonRetriableError` with the stored reason and counts one
`failed` outcome; a retryable error propagates, so Inngest retries the step. `InngestRunner` runs the
switchover's steps (`knowledge.switchover`), a knowledge error that fails for good made non-retriable.

This module must never hold ingestion logic: it translates, and builds the `Ingestion` of a step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast
from uuid import UUID

import inngest

from functions._services import ServiceSlot
from knowledge.errors import KnowledgeError
from knowledge.failures import SourceFailedError, fails_document, reason_of
from knowledge.ingestion import Ingestion, Step, Steps

__all__ = ["InngestRunner", "drive", "ingestion_of", "source_id_of"]

T = TypeVar("T")
R = TypeVar("R")


def source_id_of(data: object) -> UUID:
    """The `source_id` of an event's data, or a `NonRetriableError` (a bad event never becomes good)."""
    try:
        return UUID(str(data["source_id"]))  # type: ignore[index]
    except (KeyError, TypeError, ValueError) as exc:
        raise inngest.NonRetriableError(f"the event names no valid source_id: {exc}") from exc


def ingestion_of(slot: ServiceSlot) -> Callable[[], Ingestion]:
    """The `Ingestion` a step reads when it runs: the services' database, store, embedders and bounds."""

    def read() -> Ingestion:
        services = slot.get()
        return Ingestion.configured(
            services.db, services.object_store, embedders=services.embedders.get, settings=services.settings
        )

    return read


async def drive(ctx: inngest.Context, steps: Steps[R], slot: ServiceSlot, *, count_failed: bool = True) -> R:
    """Run a core sequence as durable steps: each `Step` becomes `ctx.step.run(step.name, ...)`.

    The step reads the `Ingestion` of the services here, then enters the core; a `SourceFailedError`
    becomes `NonRetriableError` with the stored reason (counted as a `failed` outcome when `count_failed`).
    """
    try:
        step = next(steps)
        while True:
            step = steps.send(await ctx.step.run(step.name, _durable(step, slot, count_failed)))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        steps.close()


def _durable(step: Step, slot: ServiceSlot, count_failed: bool) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        kit = ingestion_of(slot)()
        try:
            return await step.fn(kit)
        except SourceFailedError as exc:
            if count_failed:
                slot.get().metrics.ingestion_outcomes.labels(outcome="failed").inc()
            raise inngest.NonRetriableError(exc.message) from exc

    return run


class InngestRunner:
    """Runs the switchover's steps as durable Inngest steps, a failing knowledge error made non-retriable."""

    durable = True

    def __init__(self, ctx: inngest.Context) -> None:
        self.ctx = ctx

    async def run(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        """`ctx.step.run(name, ...)` over `fn`."""

        async def step() -> Any:
            try:
                return await fn()
            except KnowledgeError as exc:
                if not fails_document(exc):
                    raise
                raise inngest.NonRetriableError(reason_of(exc)) from exc

        return cast(T, await self.ctx.step.run(name, step))
